#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "core/check.h"

namespace lmrun {

namespace {

constexpr std::string_view kWhiteSpaceRanges =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

}  // namespace

struct Regex::Compiled {
    pcre2_code* code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

std::string translate_whitespace_classes(std::string_view pattern) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char escaped = pattern[++i];
            if (escaped == 's') {
                out += in_class ? std::string(kWhiteSpaceRanges) : "[" + std::string(kWhiteSpaceRanges) + "]";
            } else if (escaped == 'S' && !in_class) {
                out += "[^" + std::string(kWhiteSpaceRanges) + "]";
            } else {
                out += c;
                out += escaped;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out += c;
            // A ']' right after '[' or '[^' is a literal member, not the end.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
            continue;
        }
        if (in_class && c == ']') in_class = false;
        out += c;
    }
    return out;
}

std::string regex_escape(std::string_view literal) {
    std::string out;
    for (char c : literal) {
        if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

Result<Regex> Regex::compile(std::string_view pattern) {
    const std::string translated = translate_whitespace_classes(pattern);
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error_code, message, sizeof(message));
        return make_error("regex '{}': {} at offset {}", pattern, reinterpret_cast<const char*>(message),
                          error_offset);
    }
    // JIT is an optimisation only: when unavailable, pcre2_match interprets.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    auto compiled = std::make_shared<Compiled>();
    compiled->code = code;
    Regex regex;
    regex.compiled_ = std::move(compiled);
    return regex;
}

std::vector<ByteRange> Regex::find_all(std::string_view text) const {
    std::vector<ByteRange> matches;
    pcre2_match_data* match_data = pcre2_match_data_create_from_pattern(compiled_->code, nullptr);
    LMRUN_CHECK(match_data != nullptr, "out of memory");
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t offset = 0;
    while (offset <= text.size()) {
        int rc = pcre2_match(compiled_->code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match_data,
                             nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
            rc = pcre2_match(compiled_->code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                             match_data, nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            // Resource limits on adversarial input: keep the rest as one piece
            // rather than abort; encode() has no error channel.
            if (offset < text.size()) matches.push_back({offset, text.size()});
            break;
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
        const size_t begin = ovector[0];
        const size_t end = ovector[1];
        if (end > begin) matches.push_back({begin, end});
        if (end > offset) {
            offset = end;
        } else {
            // Empty match: step over one whole code point.
            ++offset;
            while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80)
                ++offset;
        }
    }
    pcre2_match_data_free(match_data);
    return matches;
}

}  // namespace lmrun
