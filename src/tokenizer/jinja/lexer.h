// Jinja lexer: splits template source into text and tag tokens, applying the
// whitespace rules Hugging Face uses (trim_blocks, lstrip_blocks, `-`/`+`
// modifiers, one trailing newline dropped, newlines normalised to "\n"),
// then tokenizes expressions inside {{ }} and {% %}. Comments are dropped,
// {% raw %} blocks become text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace lmrun::jinja {

struct SourcePos {
    int line = 1;    // 1-based
    int column = 1;  // 1-based, in bytes
};

enum class TokenKind {
    Text,
    VariableBegin,  // {{
    VariableEnd,    // }}
    BlockBegin,     // {%
    BlockEnd,       // %}
    Name,
    String,    // text holds the decoded value
    Integer,   // int_value
    Float,     // float_value
    Operator,  // text holds the operator: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
    End,
};

struct Token {
    TokenKind kind = TokenKind::End;
    std::string text;
    SourcePos pos;
    int64_t int_value = 0;
    double float_value = 0.0;
};

// Errors carry "line L, column C" of the offending character.
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace lmrun::jinja
