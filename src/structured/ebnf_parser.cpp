#include "structured/ebnf_parser.h"

#include <unordered_map>

#include "tokenizer/unicode.h"

namespace lmrun::structured {
namespace {

constexpr int kEbnfMaxNesting = 200;
constexpr int64_t kEbnfMaxRepeat = 100000;

struct Reference {
    ExprId expr;  // a placeholder reference, resolved once every rule is known
    std::string name;
    int line, column;
};

class EbnfParser {
  public:
    explicit EbnfParser(std::string_view text) : text_(text) {}

    Result<Grammar> parse(std::string_view root_rule) {
        skip_space();
        if (at_end()) return error("the grammar is empty");
        while (!at_end()) {
            LMRUN_RETURN_IF_ERROR(parse_rule());
            skip_space();
        }
        for (const Reference& reference : references_) {
            auto found = rule_ids_.find(reference.name);
            if (found == rule_ids_.end()) {
                return make_error("grammar error at line {}, column {}: undefined rule '{}'", reference.line,
                                  reference.column, reference.name);
            }
            grammar_.set_ref_target(reference.expr, found->second);
        }
        const RuleId root = grammar_.find_rule(root_rule);
        if (root < 0) return make_error("grammar error: there is no rule named '{}'", root_rule);
        grammar_.set_root(root);
        return std::move(grammar_);
    }

  private:
    template <typename... Args>
    Error error(fmt::format_string<Args...> format, Args&&... args) const {
        auto [line, column] = line_column(pos_);
        return make_error("grammar syntax error at line {}, column {}: {}", line, column,
                          fmt::format(format, std::forward<Args>(args)...));
    }

    std::pair<int, int> line_column(size_t pos) const {
        int line = 1, column = 1;
        for (size_t i = 0; i < pos && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        return {line, column};
    }

    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }

    void skip_space() {
        while (!at_end()) {
            const char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && text_[pos_] != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    static bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
    static bool is_name_char(char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    }

    std::string_view read_name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(text_[pos_])) ++pos_;
        return text_.substr(start, pos_ - start);
    }

    // Whether a `name ::=` starts here (the end of the current rule).
    bool at_rule_start() const {
        size_t p = pos_;
        if (p >= text_.size() || !is_name_start(text_[p])) return false;
        while (p < text_.size() && is_name_char(text_[p])) ++p;
        while (p < text_.size() &&
               (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r'))
            ++p;
        return text_.substr(p, 3) == "::=";
    }

    Status parse_rule() {
        if (!is_name_start(peek())) return error("expected a rule name");
        const size_t name_pos = pos_;
        const std::string name(read_name());
        skip_space();
        if (text_.substr(pos_, 3) != "::=") return error("expected '::=' after rule name '{}'", name);
        pos_ += 3;
        if (rule_ids_.count(name)) {
            pos_ = name_pos;
            return error("rule '{}' is defined twice", name);
        }
        const RuleId rule = grammar_.add_rule(name);
        rule_ids_[name] = rule;
        LMRUN_ASSIGN_OR_RETURN(ExprId body, parse_alternatives(0));
        grammar_.set_body(rule, body);
        skip_space();
        if (!at_end() && !at_rule_start()) return error("unexpected '{}'", peek());
        return ok_status();
    }

    Result<ExprId> parse_alternatives(int nesting) {
        std::vector<ExprId> alternatives;
        while (true) {
            LMRUN_ASSIGN_OR_RETURN(ExprId sequence, parse_sequence(nesting));
            alternatives.push_back(sequence);
            skip_space();
            if (peek() != '|') break;
            ++pos_;
        }
        return grammar_.choice(std::move(alternatives));
    }

    Result<ExprId> parse_sequence(int nesting) {
        std::vector<ExprId> items;
        while (true) {
            skip_space();
            const char c = peek();
            if (at_end() || c == '|' || c == ')' || at_rule_start()) break;
            LMRUN_ASSIGN_OR_RETURN(ExprId item, parse_item(nesting));
            items.push_back(item);
        }
        if (items.empty()) return grammar_.empty();
        return grammar_.sequence(std::move(items));
    }

    Result<ExprId> parse_item(int nesting) {
        LMRUN_ASSIGN_OR_RETURN(ExprId item, parse_primary(nesting));
        while (true) {
            const char c = peek();
            if (c == '*') {
                ++pos_;
                item = grammar_.star(item);
            } else if (c == '+') {
                ++pos_;
                item = grammar_.plus(item);
            } else if (c == '?') {
                ++pos_;
                item = grammar_.optional(item);
            } else if (c == '{') {
                LMRUN_ASSIGN_OR_RETURN(item, parse_braces(item));
            } else {
                return item;
            }
        }
    }

    Result<int64_t> parse_count() {
        skip_space();
        if (!std::isdigit(static_cast<unsigned char>(peek()))) return error("expected a number");
        int64_t value = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
            value = value * 10 + (text_[pos_++] - '0');
            if (value > kEbnfMaxRepeat) return error("repetition count above {}", kEbnfMaxRepeat);
        }
        skip_space();
        return value;
    }

    Result<ExprId> parse_braces(ExprId item) {
        ++pos_;  // '{'
        LMRUN_ASSIGN_OR_RETURN(int64_t min_repeat, parse_count());
        int64_t max_repeat = min_repeat;
        if (peek() == ',') {
            ++pos_;
            skip_space();
            if (peek() == '}') {
                max_repeat = kUnbounded;
            } else {
                LMRUN_ASSIGN_OR_RETURN(max_repeat, parse_count());
            }
        }
        if (peek() != '}') return error("expected '}}' to close the repetition");
        ++pos_;
        if (max_repeat != kUnbounded && max_repeat < min_repeat)
            return error("repetition {{{},{}}} has its maximum below its minimum", min_repeat, max_repeat);
        return grammar_.repeat(item, int32_t(min_repeat), int32_t(max_repeat));
    }

    Result<ExprId> parse_primary(int nesting) {
        const char c = peek();
        if (c == '"' || c == '\'') return parse_literal(c);
        if (c == '[') return parse_class();
        if (c == '.') {
            ++pos_;
            return grammar_.any_char();
        }
        if (c == '(') {
            if (nesting >= kEbnfMaxNesting)
                return error("parentheses nested deeper than {}", kEbnfMaxNesting);
            ++pos_;
            LMRUN_ASSIGN_OR_RETURN(ExprId inner, parse_alternatives(nesting + 1));
            skip_space();
            if (peek() != ')') return error("expected ')'");
            ++pos_;
            return inner;
        }
        if (is_name_start(c)) {
            auto [line, column] = line_column(pos_);
            std::string name(read_name());
            // Placeholder reference (rule 0) until every rule name is known.
            ExprId ref = grammar_.ref(0);
            references_.push_back({ref, std::move(name), line, column});
            return ref;
        }
        if (at_end()) return error("unexpected end of the grammar");
        return error("unexpected '{}'", c);
    }

    Result<char32_t> parse_hex(int digits) {
        char32_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const char c = peek();
            int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
            if (digit < 0) return error("expected {} hex digits", digits);
            value = value * 16 + char32_t(digit);
            ++pos_;
        }
        if (value > kMaxCodepoint) return error("code point U+{:X} is out of range", uint32_t(value));
        return value;
    }

    // One (possibly escaped) character inside a literal or class.
    Result<char32_t> parse_char() {
        if (at_end()) return error("unexpected end inside a literal or class");
        const unsigned char lead = static_cast<unsigned char>(text_[pos_]);
        if (lead != '\\') {
            // Raw UTF-8.
            const size_t length = lead < 0x80    ? 1
                                  : lead >= 0xF0 ? 4
                                  : lead >= 0xE0 ? 3
                                  : lead >= 0xC0 ? 2
                                                 : 0;
            if (length == 0 || pos_ + length > text_.size()) return error("invalid UTF-8");
            char32_t cp = length == 1 ? lead : lead & (0xFF >> (length + 1));
            for (size_t i = 1; i < length; ++i) {
                const unsigned char next = static_cast<unsigned char>(text_[pos_ + i]);
                if ((next & 0xC0) != 0x80) return error("invalid UTF-8");
                cp = (cp << 6) | (next & 0x3F);
            }
            pos_ += length;
            return cp;
        }
        ++pos_;
        const char escape = peek();
        ++pos_;
        switch (escape) {
            case 'n':
                return U'\n';
            case 'r':
                return U'\r';
            case 't':
                return U'\t';
            case 'x':
                return parse_hex(2);
            case 'u':
                return parse_hex(4);
            case 'U':
                return parse_hex(8);
            case '\\':
            case '"':
            case '\'':
            case '[':
            case ']':
            case '-':
            case '^':
            case '/':
                return char32_t(escape);
            default:
                --pos_;
                return error("unknown escape '\\{}'", escape);
        }
    }

    Result<ExprId> parse_literal(char quote) {
        ++pos_;
        std::string utf8;
        while (peek() != quote) {
            if (at_end()) return error("unterminated string literal");
            LMRUN_ASSIGN_OR_RETURN(char32_t cp, parse_char());
            if (cp >= 0xD800 && cp <= 0xDFFF) return error("surrogate code point in a literal");
            unicode::append_utf8(utf8, cp);
        }
        ++pos_;
        return grammar_.literal(utf8);
    }

    Result<ExprId> parse_class() {
        ++pos_;
        bool negated = false;
        if (peek() == '^') {
            negated = true;
            ++pos_;
        }
        std::vector<CodepointRange> ranges;
        while (peek() != ']') {
            if (at_end()) return error("unterminated character class");
            LMRUN_ASSIGN_OR_RETURN(char32_t first, parse_char());
            char32_t last = first;
            if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                ++pos_;
                LMRUN_ASSIGN_OR_RETURN(last, parse_char());
                if (last < first) return error("character range is reversed");
            }
            ranges.push_back({first, last});
        }
        ++pos_;
        return grammar_.char_class(ranges, negated);
    }

    std::string_view text_;
    size_t pos_ = 0;
    Grammar grammar_;
    std::unordered_map<std::string, RuleId> rule_ids_;
    std::vector<Reference> references_;
};

}  // namespace

Result<Grammar> parse_ebnf(std::string_view text, std::string_view root_rule) {
    EbnfParser parser(text);
    return parser.parse(root_rule);
}

}  // namespace lmrun::structured
