// Regular expressions (the ECMAScript / Python `re` subset that constrained
// decoding needs) as Grammar expressions: literals and escapes (\n \t \xHH
// \uHHHH \u{H..}), `.`, classes [...] with ranges and negation, \d \w \s and
// their negations, groups (...) (?:...) (?<name>...) (?P<name>...), alternation,
// and the quantifiers * + ? {n} {n,} {n,m} (lazy forms match the same strings).
// `.` follows ECMAScript: any character but \n, \r, U+2028 and U+2029.
//
// Not regular, or not supported, and reported as errors naming the construct:
// backreferences, lookaround, \b, inline flags, possessive quantifiers, and
// anchors (^ $) anywhere but the ends of the pattern.
//
// In JSON-string mode the expression produces the *encoded* form of matching
// strings as they appear between the quotes of a JSON string: `"` and `\` become
// \" and \\, control characters their short escapes or \u00XX.
#pragma once

#include <string_view>

#include "core/result.h"
#include "structured/grammar.h"

namespace lmrun::structured {

struct RegexOptions {
    bool json_string = false;  // emit JSON-string-encoded text (for JSON Schema "pattern")
    bool search = false;       // JSON Schema semantics: unanchored ends match anywhere (.* added)
};

Result<ExprId> add_regex(Grammar& grammar, std::string_view pattern, const RegexOptions& options = {});

// A grammar whose root matches exactly the strings the pattern matches in full.
Result<Grammar> grammar_from_regex(std::string_view pattern);

// A character class as JSON-string-encoded text (shared with the JSON Schema converter).
ExprId json_string_chars(Grammar& grammar, const std::vector<CodepointRange>& ranges);

}  // namespace lmrun::structured
