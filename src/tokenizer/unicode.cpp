#include "tokenizer/unicode.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "core/check.h"

namespace lmrun::unicode {

namespace {

bool is_continuation(unsigned char byte) {
    return (byte & 0xC0) == 0x80;
}

// Bounds of the second byte of a sequence, which are narrower than 80..BF for a
// few lead bytes (overlongs, surrogates, > U+10FFFF); see Unicode Table 3-7.
void second_byte_range(unsigned char lead, unsigned char& low, unsigned char& high) {
    low = 0x80;
    high = 0xBF;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
}

size_t expected_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

// Number of bytes from pos that form a valid prefix of a sequence (at least 1):
// a maximal subpart when the sequence is ill-formed.
size_t valid_prefix_length(std::string_view text, size_t pos, size_t needed) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    size_t length = 1;
    while (length < needed && pos + length < text.size()) {
        const auto byte = static_cast<unsigned char>(text[pos + length]);
        if (length == 1) {
            unsigned char low, high;
            second_byte_range(lead, low, high);
            if (byte < low || byte > high) break;
        } else if (!is_continuation(byte)) {
            break;
        }
        ++length;
    }
    return length;
}

const icu::Normalizer2* normalizer_for(NormalForm form, UErrorCode& status) {
    switch (form) {
        case NormalForm::Nfc:
            return icu::Normalizer2::getNFCInstance(status);
        case NormalForm::Nfd:
            return icu::Normalizer2::getNFDInstance(status);
        case NormalForm::Nfkc:
            return icu::Normalizer2::getNFKCInstance(status);
        case NormalForm::Nfkd:
            return icu::Normalizer2::getNFKDInstance(status);
    }
    return nullptr;
}

bool is_ascii(std::string_view text) {
    for (char c : text) {
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    }
    return true;
}

}  // namespace

size_t valid_sequence_length(std::string_view text, size_t pos) {
    const size_t needed = expected_length(static_cast<unsigned char>(text[pos]));
    if (needed == 0) return 0;
    return valid_prefix_length(text, pos, needed) == needed ? needed : 0;
}

bool is_valid_utf8(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
        if (static_cast<unsigned char>(text[pos]) < 0x80) {
            ++pos;
            continue;
        }
        const size_t length = valid_sequence_length(text, pos);
        if (length == 0) return false;
        pos += length;
    }
    return true;
}

std::string utf8_lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t pos = 0;
    while (pos < bytes.size()) {
        const auto lead = static_cast<unsigned char>(bytes[pos]);
        if (lead < 0x80) {
            out.push_back(static_cast<char>(lead));
            ++pos;
            continue;
        }
        const size_t needed = expected_length(lead);
        const size_t length = needed == 0 ? 1 : valid_prefix_length(bytes, pos, needed);
        if (length == needed) {
            out.append(bytes.substr(pos, length));
        } else {
            out.append(kReplacementChar);
        }
        pos += length;
    }
    return out;
}

char32_t next_code_point(std::string_view text, size_t& pos) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    const size_t length = expected_length(lead);
    LMRUN_CHECK(length > 0 && pos + length <= text.size(), "invalid UTF-8 at byte %zu", pos);
    char32_t code_point = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t i = 1; i < length; ++i) {
        code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    }
    pos += length;
    return code_point;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool is_whitespace(char32_t cp) {
    return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE);
}

bool is_alphanumeric(char32_t cp) {
    const auto c = static_cast<UChar32>(cp);
    if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC)) return true;
    const int8_t type = u_charType(c);
    return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

std::string normalize(std::string_view text, NormalForm form) {
    // Every ASCII string is in all four forms; skipping ICU keeps plain text cheap.
    if (is_ascii(text)) return std::string(text);
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* normalizer = normalizer_for(form, status);
    LMRUN_CHECK(U_SUCCESS(status) && normalizer != nullptr, "ICU normalizer unavailable");
    const icu::UnicodeString source =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    if (normalizer->isNormalized(source, status) && U_SUCCESS(status)) return std::string(text);
    status = U_ZERO_ERROR;
    const icu::UnicodeString result = normalizer->normalize(source, status);
    LMRUN_CHECK(U_SUCCESS(status), "ICU normalization failed");
    std::string out;
    result.toUTF8String(out);
    return out;
}

std::string to_lowercase(std::string_view text) {
    const icu::UnicodeString source =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    icu::UnicodeString lowered = source;
    lowered.toLower(icu::Locale::getRoot());
    std::string out;
    lowered.toUTF8String(out);
    return out;
}

}  // namespace lmrun::unicode
