// Statement parser: turns template source into a Template AST. Supports
// if/elif/else, for (with tuple targets, `if` filter, else), set (plain,
// tuple, namespace attribute, block), macro, break/continue,
// raw and generation blocks. Anything else is an Error naming line and column.
// Templates are untrusted: their size, block nesting and expression depth are bounded
// (errors of kind ResourceExhausted), so no template can make the parser, the tree or the
// interpreter recurse without bound.
#pragma once

#include <memory>
#include <string_view>

#include "core/result.h"
#include "tokenizer/jinja/ast.h"

namespace lmrun::jinja {

// Real chat templates are tens of KB.
inline constexpr size_t kMaxTemplateBytes = size_t(1) << 20;

Result<std::unique_ptr<Template>> parse_template(std::string_view source);

}  // namespace lmrun::jinja
