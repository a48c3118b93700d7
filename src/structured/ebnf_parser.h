// Reads grammars written in GBNF-style EBNF (the syntax llama.cpp, vLLM and
// XGrammar accept) into a Grammar:
//
//   root   ::= "{" ws pair ("," ws pair)* "}"     # comments run to the end of the line
//   pair   ::= string ":" ws [0-9]+
//   string ::= "\"" [^"\\\x00-\x1F]{1,20} "\""
//   ws     ::= [ \t\n]*
//
// Terminals are "..." or '...' literals and [...] character classes (ranges,
// ^ negation; escapes \n \r \t \\ \" \' \[ \] \- \^ \xHH \uHHHH \UHHHHHHHH), and
// `.` for any character. Operators: sequence by juxtaposition, `|`, grouping
// with (...), and the quantifiers * + ? {m} {m,} {m,n}. A rule runs until the
// next `name ::=`, so line breaks are free. The start rule is `root`.
// Every error names its line and column.
#pragma once

#include <string_view>

#include "core/result.h"
#include "structured/grammar.h"

namespace lmrun::structured {

Result<Grammar> parse_ebnf(std::string_view text, std::string_view root_rule = "root");

}  // namespace lmrun::structured
