// Recursive-descent parser for Jinja expressions, with Jinja's precedence:
// conditional < or < and < not < comparisons/in < + - < ~ < * / // % < ** <
// unary - + < postfix (. [] ()) and filters/tests (| and is).
#pragma once

#include "core/result.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/token_stream.h"

namespace lmrun::jinja {

// Deepest expression tree the parser builds (Jinja expressions in chat templates stay under 20).
inline constexpr int kMaxExpressionDepth = 200;

// A single expression; with_conditional = false leaves `if` for the caller
// (the `for x in xs if cond` filter).
Result<ExprPtr> parse_expression(TokenStream& stream, bool with_conditional = true);
// Comma-separated expressions without brackets become a tuple (ListExpr).
Result<ExprPtr> parse_tuple(TokenStream& stream, bool with_conditional = true);
// After '(' has been seen: positional and keyword arguments up to ')'.
Result<CallArgExprs> parse_call_args(TokenStream& stream);

}  // namespace lmrun::jinja
