#include "tokenizer/jinja/lexer.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "tokenizer/jinja/text_util.h"

namespace lmrun::jinja {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
    return is_name_start(c) || is_digit(c);
}

// Jinja reads templates with universal newlines and, without
// keep_trailing_newline, drops one final newline.
std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

class Lexer {
  public:
    explicit Lexer(std::string_view source) : source_(normalize_source(source)) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < source_.size(); ++i)
            if (source_[i] == '\n') line_starts_.push_back(i + 1);
    }

    Result<std::vector<Token>> run() {
        while (pos_ < source_.size()) {
            const size_t tag = find_tag_start(pos_);
            if (tag == std::string::npos) {
                emit_text(pos_, source_.size(), 0, 0);
                break;
            }
            const char kind = source_[tag + 1];
            const char modifier = modifier_at(tag + 2);
            emit_text(pos_, tag, kind, modifier);
            if (kind == '#') {
                LMRUN_RETURN_IF_ERROR(lex_comment(tag));
            } else if (kind == '%' && is_raw_begin(tag)) {
                LMRUN_RETURN_IF_ERROR(lex_raw(tag));
            } else {
                LMRUN_RETURN_IF_ERROR(lex_tag(tag, kind == '%'));
            }
        }
        tokens_.push_back(Token{TokenKind::End, "", position(source_.size()), 0, 0.0});
        return std::move(tokens_);
    }

  private:
    SourcePos position(size_t offset) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const size_t line = static_cast<size_t>(it - line_starts_.begin());
        return SourcePos{static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
    }

    Error error_at(size_t offset, const std::string& message) const {
        const SourcePos pos = position(offset);
        return make_error("line {}, column {}: {}", pos.line, pos.column, message);
    }

    bool starts_with_at(size_t offset, std::string_view text) const {
        return source_.compare(offset, text.size(), text) == 0;
    }

    char modifier_at(size_t offset) const {
        if (offset < source_.size() && (source_[offset] == '-' || source_[offset] == '+'))
            return source_[offset];
        return 0;
    }

    size_t find_tag_start(size_t from) const {
        for (size_t i = source_.find('{', from); i != std::string::npos; i = source_.find('{', i + 1)) {
            if (i + 1 < source_.size() && std::strchr("{%#", source_[i + 1]) != nullptr) return i;
        }
        return std::string::npos;
    }

    // Text before a tag: `-` strips all whitespace before it; block and comment
    // tags (lstrip_blocks) strip spaces back to the start of their line.
    void emit_text(size_t begin, size_t end, char tag_kind, char modifier) {
        std::string_view text(source_.data() + begin, end - begin);
        std::string kept(text);
        if (modifier == '-') {
            kept = python_strip(text, StripSide::Right, "", false);  // Python's rstrip(): Unicode spaces too
        } else if ((tag_kind == '%' || tag_kind == '#') && modifier != '+') {
            const size_t newline = text.rfind('\n');
            const size_t line_begin = newline == std::string_view::npos ? 0 : newline + 1;
            const bool line_starting = begin == 0 || source_[begin - 1] == '\n';
            if ((line_begin > 0 || line_starting) &&
                python_strip(text.substr(line_begin), StripSide::Both, "", false).empty())
                kept.resize(line_begin);
        }
        if (!kept.empty())
            tokens_.push_back(Token{TokenKind::Text, std::move(kept), position(begin), 0, 0.0});
    }

    // After a tag: `-` strips all following whitespace; block and comment tags
    // (trim_blocks) eat one newline unless marked with `+`.
    void skip_after_tag(size_t offset, char modifier, bool trims_newline) {
        pos_ = offset;
        if (modifier == '-') {
            while (pos_ < source_.size()) {
                size_t next = pos_;
                if (!is_python_space(decode_utf8(source_, next))) break;
                pos_ = next;
            }
        } else if (trims_newline && modifier != '+' && pos_ < source_.size() && source_[pos_] == '\n') {
            ++pos_;
        }
    }

    Status lex_comment(size_t tag) {
        const size_t end = source_.find("#}", tag + 2);
        if (end == std::string::npos) return error_at(tag, "unclosed comment, expected '#}'");
        const char modifier = end > tag + 2 ? modifier_at(end - 1) : '\0';
        skip_after_tag(end + 2, modifier, true);
        return ok_status();
    }

    // Matches `{%[-+]? *<word> *[-+]?%}` at `tag`; returns the offset after it.
    size_t match_simple_tag(size_t tag, std::string_view word, char* begin_modifier,
                            char* end_modifier) const {
        size_t p = tag + 2;
        *begin_modifier = modifier_at(p);
        if (*begin_modifier != 0) ++p;
        while (p < source_.size() && is_space(source_[p])) ++p;
        if (!starts_with_at(p, word)) return std::string::npos;
        p += word.size();
        if (p < source_.size() && is_name_char(source_[p])) return std::string::npos;
        while (p < source_.size() && is_space(source_[p])) ++p;
        *end_modifier = modifier_at(p);
        if (*end_modifier != 0) ++p;
        if (!starts_with_at(p, "%}")) return std::string::npos;
        return p + 2;
    }

    bool is_raw_begin(size_t tag) const {
        char begin_modifier = 0;
        char end_modifier = 0;
        return match_simple_tag(tag, "raw", &begin_modifier, &end_modifier) != std::string::npos;
    }

    Status lex_raw(size_t tag) {
        char begin_modifier = 0;
        char end_modifier = 0;
        const size_t content_begin = match_simple_tag(tag, "raw", &begin_modifier, &end_modifier);
        // Jinja applies no trim_blocks after {% raw %}, only an explicit `-`.
        skip_after_tag(content_begin, end_modifier, false);
        const size_t content_start = pos_;
        for (size_t end_tag = source_.find("{%", pos_); end_tag != std::string::npos;
             end_tag = source_.find("{%", end_tag + 1)) {
            const size_t after = match_simple_tag(end_tag, "endraw", &begin_modifier, &end_modifier);
            if (after == std::string::npos) continue;
            emit_text(content_start, end_tag, '%', begin_modifier);
            skip_after_tag(after, end_modifier, true);
            return ok_status();
        }
        return error_at(tag, "unclosed {% raw %} block, expected {% endraw %}");
    }

    Status lex_tag(size_t tag, bool is_block) {
        const SourcePos begin_pos = position(tag);
        tokens_.push_back(
            Token{is_block ? TokenKind::BlockBegin : TokenKind::VariableBegin, "", begin_pos, 0, 0.0});
        size_t p = tag + 2 + (modifier_at(tag + 2) != 0 ? 1 : 0);
        const std::string_view end_marker = is_block ? "%}" : "}}";
        int depth = 0;
        while (true) {
            while (p < source_.size() && is_space(source_[p])) ++p;
            if (p >= source_.size())
                return error_at(tag, fmt::format("unclosed tag, expected '{}'", end_marker));
            const char modifier = modifier_at(p);
            const size_t marker = p + (modifier != 0 ? 1 : 0);
            if (depth == 0 && starts_with_at(marker, end_marker)) {
                tokens_.push_back(
                    Token{is_block ? TokenKind::BlockEnd : TokenKind::VariableEnd, "", position(p), 0, 0.0});
                skip_after_tag(marker + 2, modifier, is_block);
                return ok_status();
            }
            LMRUN_ASSIGN_OR_RETURN(p, lex_expression_token(p, depth));
        }
    }

    Result<size_t> lex_expression_token(size_t p, int& depth) {
        const char c = source_[p];
        if (is_name_start(c)) {
            size_t end = p;
            while (end < source_.size() && is_name_char(source_[end])) ++end;
            tokens_.push_back(Token{TokenKind::Name, source_.substr(p, end - p), position(p), 0, 0.0});
            return end;
        }
        if (is_digit(c)) return lex_number(p);
        if (c == '\'' || c == '"') return lex_string(p);
        static constexpr std::string_view kTwoCharOperators[] = {"//", "**", "==", "!=", "<=", ">="};
        for (const std::string_view op : kTwoCharOperators) {
            if (starts_with_at(p, op)) {
                tokens_.push_back(Token{TokenKind::Operator, std::string(op), position(p), 0, 0.0});
                return p + 2;
            }
        }
        if (std::strchr("+-*/%~<>=()[]{},.:|", c) == nullptr)
            return error_at(p, fmt::format("unexpected character '{}' in expression", c));
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        tokens_.push_back(Token{TokenKind::Operator, std::string(1, c), position(p), 0, 0.0});
        return p + 1;
    }

    Result<size_t> lex_number(size_t p) {
        const size_t start = p;
        std::string digits;
        const auto take_digits = [&] {
            while (p < source_.size() &&
                   (is_digit(source_[p]) ||
                    (source_[p] == '_' && p + 1 < source_.size() && is_digit(source_[p + 1])))) {
                if (source_[p] != '_') digits += source_[p];
                ++p;
            }
        };
        take_digits();
        bool is_float = false;
        if (p + 1 < source_.size() && source_[p] == '.' && is_digit(source_[p + 1])) {
            is_float = true;
            digits += source_[p++];
            take_digits();
        }
        if (p < source_.size() && (source_[p] == 'e' || source_[p] == 'E')) {
            size_t q = p + 1;
            if (q < source_.size() && (source_[q] == '+' || source_[q] == '-')) ++q;
            if (q < source_.size() && is_digit(source_[q])) {
                is_float = true;
                digits += source_.substr(p, q - p);
                p = q;
                take_digits();
            }
        }
        Token token{is_float ? TokenKind::Float : TokenKind::Integer, source_.substr(start, p - start),
                    position(start), 0, 0.0};
        const char* first = digits.data();
        const char* last = digits.data() + digits.size();
        const auto parsed = is_float ? std::from_chars(first, last, token.float_value)
                                     : std::from_chars(first, last, token.int_value);
        if (parsed.ec != std::errc() || parsed.ptr != last)
            return error_at(start, fmt::format("number '{}' is out of range", token.text));
        tokens_.push_back(std::move(token));
        return p;
    }

    // Decodes a Python-style escape after the backslash at `p`; returns the offset after it.
    size_t decode_escape(size_t p, std::string& out) const {
        const char c = source_[p];
        static constexpr std::string_view kSimple = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
        for (size_t i = 0; i < kSimple.size(); i += 2) {
            if (c == kSimple[i]) {
                out += kSimple[i + 1];
                return p + 1;
            }
        }
        if (c == '\n') return p + 1;  // line continuation
        const size_t num_hex = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
        if (num_hex > 0 && p + num_hex < source_.size()) {
            uint32_t cp = 0;
            const auto parsed =
                std::from_chars(source_.data() + p + 1, source_.data() + p + 1 + num_hex, cp, 16);
            if (parsed.ec == std::errc() && parsed.ptr == source_.data() + p + 1 + num_hex &&
                cp <= 0x10FFFF) {
                append_utf8(out, cp);
                return p + 1 + num_hex;
            }
        }
        if (c >= '0' && c <= '7') {
            uint32_t cp = 0;
            size_t q = p;
            while (q < p + 3 && q < source_.size() && source_[q] >= '0' && source_[q] <= '7')
                cp = cp * 8 + static_cast<uint32_t>(source_[q++] - '0');
            append_utf8(out, cp);
            return q;
        }
        out += '\\';  // unknown escapes keep their backslash, as in Python
        return p;
    }

    Result<size_t> lex_string(size_t p) {
        const size_t start = p;
        const char quote = source_[p++];
        std::string value;
        while (p < source_.size() && source_[p] != quote) {
            if (source_[p] == '\\' && p + 1 < source_.size()) {
                p = decode_escape(p + 1, value);
            } else {
                value += source_[p++];
            }
        }
        if (p >= source_.size()) return error_at(start, "unterminated string literal");
        tokens_.push_back(Token{TokenKind::String, std::move(value), position(start), 0, 0.0});
        return p + 1;
    }

    std::string source_;
    size_t pos_ = 0;
    std::vector<Token> tokens_;
    std::vector<size_t> line_starts_;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
    return Lexer(source).run();
}

}  // namespace lmrun::jinja
