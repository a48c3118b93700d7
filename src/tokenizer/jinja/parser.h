// Statement parser: turns template source into a Template AST. Supports
// if/elif/else, for (with tuple targets, `if` filter, else), set (plain,
// tuple, namespace attribute, block), macro, break/continue,
// raw and generation blocks. Anything else is an Error naming line and column.
#pragma once

#include <memory>
#include <string_view>

#include "core/result.h"
#include "tokenizer/jinja/ast.h"

namespace lmrun::jinja {

Result<std::unique_ptr<Template>> parse_template(std::string_view source);

}  // namespace lmrun::jinja
