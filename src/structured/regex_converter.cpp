#include "structured/regex_converter.h"

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace lmrun::structured {
namespace {

constexpr int kRegexMaxNesting = 200;
constexpr int64_t kRegexMaxRepeat = 10000;

using Ranges = std::vector<CodepointRange>;

Ranges digit_ranges() {
    return {{'0', '9'}};
}
Ranges word_ranges() {
    return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
}
Ranges space_ranges() {
    return normalize_ranges({{'\t', '\r'},
                             {' ', ' '},
                             {0xA0, 0xA0},
                             {0x1680, 0x1680},
                             {0x2000, 0x200A},
                             {0x2028, 0x2029},
                             {0x202F, 0x202F},
                             {0x205F, 0x205F},
                             {0x3000, 0x3000},
                             {0xFEFF, 0xFEFF}});
}
Ranges dot_ranges() {
    return complement_ranges(normalize_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
}

// The JSON encoding of one character that must be escaped inside a JSON string.
std::string json_escape(char32_t cp) {
    switch (cp) {
        case '"':
            return "\\\"";
        case '\\':
            return "\\\\";
        case '\b':
            return "\\b";
        case '\f':
            return "\\f";
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        default:
            return fmt::format("\\u{:04x}", uint32_t(cp));
    }
}

class RegexParser {
  public:
    RegexParser(Grammar& grammar, std::string_view pattern, const RegexOptions& options)
        : grammar_(grammar), pattern_(pattern), options_(options) {}

    Result<ExprId> parse() {
        bool anchored_start = false, anchored_end = false;
        if (!pattern_.empty() && pattern_.front() == '^') {
            anchored_start = true;
            pos_ = 1;
        }
        if (pattern_.size() > pos_ && pattern_.back() == '$' && !escaped_at(pattern_.size() - 1)) {
            anchored_end = true;
            end_ = pattern_.size() - 1;
        } else {
            end_ = pattern_.size();
        }
        LMRUN_ASSIGN_OR_RETURN(ExprId body, parse_alternation(0));
        if (pos_ < end_) return error("unbalanced ')'");
        std::vector<ExprId> parts;
        const bool wrap = options_.search;
        if (wrap && !anchored_start) parts.push_back(grammar_.star(chars(dot_ranges())));
        parts.push_back(body);
        if (wrap && !anchored_end) parts.push_back(grammar_.star(chars(dot_ranges())));
        return grammar_.sequence(std::move(parts));
    }

  private:
    template <typename... Args>
    Error error(fmt::format_string<Args...> format, Args&&... args) const {
        return make_error("invalid regex at position {}: {}", pos_,
                          fmt::format(format, std::forward<Args>(args)...));
    }

    // Whether pattern_[index] is preceded by an odd number of backslashes.
    bool escaped_at(size_t index) const {
        size_t backslashes = 0;
        while (index > backslashes && pattern_[index - backslashes - 1] == '\\') ++backslashes;
        return backslashes % 2 == 1;
    }

    bool at_end() const { return pos_ >= end_; }
    char peek() const { return at_end() ? '\0' : pattern_[pos_]; }

    ExprId chars(const Ranges& ranges) {
        return options_.json_string ? json_string_chars(grammar_, ranges) : grammar_.char_class(ranges);
    }

    Result<ExprId> parse_alternation(int nesting) {
        std::vector<ExprId> alternatives;
        while (true) {
            LMRUN_ASSIGN_OR_RETURN(ExprId concat, parse_concat(nesting));
            alternatives.push_back(concat);
            if (peek() != '|') break;
            ++pos_;
        }
        return grammar_.choice(std::move(alternatives));
    }

    Result<ExprId> parse_concat(int nesting) {
        std::vector<ExprId> items;
        while (!at_end() && peek() != '|' && peek() != ')') {
            LMRUN_ASSIGN_OR_RETURN(ExprId atom, parse_atom(nesting));
            LMRUN_ASSIGN_OR_RETURN(ExprId item, parse_quantifiers(atom));
            items.push_back(item);
        }
        if (items.empty()) return grammar_.empty();
        return grammar_.sequence(std::move(items));
    }

    Result<int64_t> parse_number() {
        int64_t value = 0;
        if (!std::isdigit(static_cast<unsigned char>(peek()))) return error("expected a number");
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
            value = value * 10 + (pattern_[pos_++] - '0');
            if (value > kRegexMaxRepeat) return error("repetition count above {}", kRegexMaxRepeat);
        }
        return value;
    }

    // {n}, {n,}, {n,m}; a '{' that does not start one is a literal (as in ECMAScript's Annex B).
    Result<bool> parse_braces(int64_t& min_repeat, int64_t& max_repeat) {
        const size_t start = pos_;
        ++pos_;
        if (!std::isdigit(static_cast<unsigned char>(peek()))) {
            pos_ = start;
            return false;
        }
        LMRUN_ASSIGN_OR_RETURN(min_repeat, parse_number());
        max_repeat = min_repeat;
        if (peek() == ',') {
            ++pos_;
            if (peek() == '}') {
                max_repeat = kUnbounded;
            } else {
                LMRUN_ASSIGN_OR_RETURN(max_repeat, parse_number());
            }
        }
        if (peek() != '}') {
            pos_ = start;
            return false;
        }
        ++pos_;
        if (max_repeat != kUnbounded && max_repeat < min_repeat)
            return error("quantifier {{{},{}}} has its maximum below its minimum", min_repeat, max_repeat);
        return true;
    }

    Result<ExprId> parse_quantifiers(ExprId atom) {
        while (!at_end()) {
            int64_t min_repeat = 0, max_repeat = kUnbounded;
            const char c = peek();
            if (c == '*') {
                ++pos_;
            } else if (c == '+') {
                ++pos_;
                min_repeat = 1;
            } else if (c == '?') {
                ++pos_;
                max_repeat = 1;
            } else if (c == '{') {
                LMRUN_ASSIGN_OR_RETURN(bool is_quantifier, parse_braces(min_repeat, max_repeat));
                if (!is_quantifier) return atom;
            } else {
                return atom;
            }
            if (peek() == '?') {
                ++pos_;  // lazy: the same strings
            } else if (peek() == '+') {
                return error("possessive quantifiers are not supported");
            }
            atom = grammar_.repeat(atom, int32_t(min_repeat), int32_t(max_repeat));
        }
        return atom;
    }

    Result<ExprId> parse_group(int nesting) {
        if (nesting >= kRegexMaxNesting) return error("groups nested deeper than {}", kRegexMaxNesting);
        ++pos_;  // '('
        if (peek() == '?') {
            ++pos_;
            const char kind = peek();
            if (kind == ':') {
                ++pos_;
            } else if (kind == 'P' && pos_ + 1 < end_ && pattern_[pos_ + 1] == '<') {
                pos_ += 2;
                while (!at_end() && peek() != '>') ++pos_;
                ++pos_;
            } else if (kind == '<' && pos_ + 1 < end_ && pattern_[pos_ + 1] != '=' &&
                       pattern_[pos_ + 1] != '!') {
                ++pos_;
                while (!at_end() && peek() != '>') ++pos_;
                ++pos_;
            } else if (kind == '=' || kind == '!' || kind == '<') {
                return error("lookaround assertions are not supported");
            } else {
                return error("inline flags and special groups (?{}...) are not supported",
                             std::string(1, kind));
            }
        }
        LMRUN_ASSIGN_OR_RETURN(ExprId inner, parse_alternation(nesting + 1));
        if (peek() != ')') return error("missing ')'");
        ++pos_;
        return inner;
    }

    Result<ExprId> parse_atom(int nesting) {
        const char c = peek();
        switch (c) {
            case '(':
                return parse_group(nesting);
            case '[':
                return parse_class_atom();
            case '.':
                ++pos_;
                return chars(dot_ranges());
            case '\\':
                return parse_escape_atom();
            case '^':
            case '$':
                return error("anchors are only supported at the start and end of the pattern");
            case '*':
            case '+':
            case '?':
                return error("quantifier '{}' has nothing to repeat", c);
            default: {
                LMRUN_ASSIGN_OR_RETURN(char32_t cp, read_utf8());
                return chars({{cp, cp}});
            }
        }
    }

    Result<char32_t> read_utf8() {
        const size_t length = unicode::valid_sequence_length(pattern_, pos_);
        if (length == 0) return error("invalid UTF-8");
        size_t p = pos_;
        const char32_t cp = unicode::next_code_point(pattern_, p);
        pos_ += length;
        return cp;
    }

    Result<char32_t> parse_hex(size_t digits) {
        char32_t value = 0;
        for (size_t i = 0; i < digits; ++i) {
            const char c = peek();
            if (!std::isxdigit(static_cast<unsigned char>(c))) return error("expected {} hex digits", digits);
            value = value * 16 +
                    char32_t(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
            ++pos_;
        }
        return value;
    }

    // After a backslash: a class escape (\d ...) fills `ranges`; else one code point.
    Result<Ranges> parse_escape() {
        ++pos_;  // '\'
        if (at_end()) return error("pattern ends with a backslash");
        const char c = pattern_[pos_++];
        switch (c) {
            case 'd':
                return digit_ranges();
            case 'D':
                return complement_ranges(digit_ranges());
            case 'w':
                return word_ranges();
            case 'W':
                return complement_ranges(word_ranges());
            case 's':
                return space_ranges();
            case 'S':
                return complement_ranges(space_ranges());
            case 'n':
                return Ranges{{'\n', '\n'}};
            case 'r':
                return Ranges{{'\r', '\r'}};
            case 't':
                return Ranges{{'\t', '\t'}};
            case 'f':
                return Ranges{{'\f', '\f'}};
            case 'v':
                return Ranges{{'\v', '\v'}};
            case '0':
                return Ranges{{0, 0}};
            case 'x': {
                LMRUN_ASSIGN_OR_RETURN(char32_t cp, parse_hex(2));
                return Ranges{{cp, cp}};
            }
            case 'u': {
                char32_t cp = 0;
                if (peek() == '{') {
                    ++pos_;
                    size_t digits = 0;
                    while (!at_end() && peek() != '}' && digits < 7) {
                        LMRUN_ASSIGN_OR_RETURN(char32_t digit, parse_hex(1));
                        cp = cp * 16 + digit;
                        ++digits;
                    }
                    if (peek() != '}' || digits == 0) return error("malformed \\u{{...}} escape");
                    ++pos_;
                } else {
                    LMRUN_ASSIGN_OR_RETURN(cp, parse_hex(4));
                }
                if (cp > kMaxCodepoint) return error("code point out of range");
                return Ranges{{cp, cp}};
            }
            case 'b':
            case 'B':
                return error("word boundaries (\\b, \\B) are not supported");
            case 'p':
            case 'P':
                return error("Unicode property classes (\\p{{...}}) are not supported");
            case 'A':
            case 'Z':
            case 'z':
                return error("anchors are only supported at the start and end of the pattern");
            default:
                if (c >= '1' && c <= '9') return error("backreferences are not supported");
                if (std::isalnum(static_cast<unsigned char>(c))) return error("unknown escape '\\{}'", c);
                return Ranges{
                    {char32_t(static_cast<unsigned char>(c)), char32_t(static_cast<unsigned char>(c))}};
        }
    }

    Result<ExprId> parse_escape_atom() {
        LMRUN_ASSIGN_OR_RETURN(Ranges ranges, parse_escape());
        return chars(ranges);
    }

    // One class member: a code point or a class escape.
    Result<Ranges> parse_class_member() {
        if (peek() == '\\') {
            if (pos_ + 1 < end_ && pattern_[pos_ + 1] == 'b') {
                pos_ += 2;
                return Ranges{{'\b', '\b'}};  // inside a class, \b is backspace
            }
            return parse_escape();
        }
        LMRUN_ASSIGN_OR_RETURN(char32_t cp, read_utf8());
        return Ranges{{cp, cp}};
    }

    Result<ExprId> parse_class_atom() {
        ++pos_;  // '['
        bool negated = false;
        if (peek() == '^') {
            negated = true;
            ++pos_;
        }
        Ranges ranges;
        while (true) {
            if (at_end()) return error("unterminated character class");
            if (peek() == ']') break;
            LMRUN_ASSIGN_OR_RETURN(Ranges first, parse_class_member());
            if (peek() == '-' && pos_ + 1 < end_ && pattern_[pos_ + 1] != ']' && first.size() == 1 &&
                first[0].first == first[0].last) {
                ++pos_;
                LMRUN_ASSIGN_OR_RETURN(Ranges last, parse_class_member());
                if (last.size() != 1 || last[0].first != last[0].last)
                    return error("a class escape cannot end a range");
                if (last[0].first < first[0].first) return error("character range is out of order");
                ranges.push_back({first[0].first, last[0].first});
            } else {
                ranges.insert(ranges.end(), first.begin(), first.end());
            }
        }
        ++pos_;  // ']'
        Ranges normalized = normalize_ranges(ranges);
        if (negated) normalized = complement_ranges(normalized);
        return chars(normalized);
    }

    Grammar& grammar_;
    std::string_view pattern_;
    RegexOptions options_;
    size_t pos_ = 0;
    size_t end_ = 0;
};

}  // namespace

ExprId json_string_chars(Grammar& grammar, const std::vector<CodepointRange>& ranges) {
    // Characters that appear raw inside a JSON string: all but controls, '"' and '\'.
    const Ranges raw_allowed = complement_ranges(normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
    Ranges raw;
    std::vector<ExprId> alternatives;
    for (CodepointRange range : ranges) {
        for (CodepointRange allowed : raw_allowed) {
            const char32_t first = std::max(range.first, allowed.first);
            const char32_t last = std::min(range.last, allowed.last);
            if (first <= last) raw.push_back({first, last});
        }
        for (char32_t cp = range.first; cp <= std::min<char32_t>(range.last, 0x5C); ++cp) {
            if (cp < 0x20 || cp == '"' || cp == '\\')
                alternatives.push_back(grammar.literal(json_escape(cp)));
        }
    }
    if (!raw.empty() || alternatives.empty())
        alternatives.insert(alternatives.begin(), grammar.char_class(raw));
    return grammar.choice(std::move(alternatives));
}

Result<ExprId> add_regex(Grammar& grammar, std::string_view pattern, const RegexOptions& options) {
    RegexParser parser(grammar, pattern, options);
    return parser.parse();
}

Result<Grammar> grammar_from_regex(std::string_view pattern) {
    Grammar grammar;
    LMRUN_ASSIGN_OR_RETURN(ExprId body, add_regex(grammar, pattern));
    grammar.set_root(grammar.add_rule("root", body));
    return grammar;
}

}  // namespace lmrun::structured
