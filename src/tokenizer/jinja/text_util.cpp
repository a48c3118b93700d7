#include "tokenizer/jinja/text_util.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

namespace lmrun::jinja {

uint32_t decode_utf8(std::string_view text, size_t& pos) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
    const uint8_t lead = byte(pos);
    size_t length = 0;
    uint32_t cp = 0;
    if (lead < 0x80) {
        ++pos;
        return lead;
    } else if ((lead & 0xE0) == 0xC0) {
        length = 2;
        cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3;
        cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4;
        cp = lead & 0x07;
    } else {
        ++pos;
        return lead;
    }
    if (pos + length > text.size()) {
        ++pos;
        return lead;
    }
    for (size_t i = 1; i < length; ++i) {
        if ((byte(pos + i) & 0xC0) != 0x80) {
            ++pos;
            return lead;
        }
        cp = (cp << 6) | (byte(pos + i) & 0x3F);
    }
    pos += length;
    return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | ((cp >> 18) & 0x07));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::vector<size_t> code_point_offsets(std::string_view text) {
    std::vector<size_t> offsets;
    offsets.reserve(text.size() + 1);
    size_t pos = 0;
    while (pos < text.size()) {
        offsets.push_back(pos);
        decode_utf8(text, pos);
    }
    offsets.push_back(text.size());
    return offsets;
}

size_t code_point_count(std::string_view text) {
    size_t count = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        decode_utf8(text, pos);
        ++count;
    }
    return count;
}

bool is_python_space(uint32_t cp) {
    if ((cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20)) return true;
    switch (cp) {
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

namespace {

// Decodes `text` into (code point, byte offset) pairs.
struct CodePoints {
    std::vector<uint32_t> values;
    std::vector<size_t> offsets;  // one more than values
};

CodePoints decode_all(std::string_view text) {
    CodePoints result;
    size_t pos = 0;
    while (pos < text.size()) {
        result.offsets.push_back(pos);
        result.values.push_back(decode_utf8(text, pos));
    }
    result.offsets.push_back(text.size());
    return result;
}

}  // namespace

std::string python_strip(std::string_view text, StripSide side, std::string_view chars, bool chars_given) {
    const CodePoints cps = decode_all(text);
    std::vector<uint32_t> strip_set;
    if (chars_given) strip_set = decode_all(chars).values;
    const auto strippable = [&](uint32_t cp) {
        if (!chars_given) return is_python_space(cp);
        for (uint32_t c : strip_set)
            if (c == cp) return true;
        return false;
    };
    size_t begin = 0;
    size_t end = cps.values.size();
    if (side != StripSide::Right)
        while (begin < end && strippable(cps.values[begin])) ++begin;
    if (side != StripSide::Left)
        while (end > begin && strippable(cps.values[end - 1])) --end;
    return std::string(text.substr(cps.offsets[begin], cps.offsets[end] - cps.offsets[begin]));
}

std::vector<std::string> python_split(std::string_view text, std::string_view sep, bool sep_given,
                                      int64_t max_split) {
    std::vector<std::string> parts;
    if (sep_given) {
        size_t start = 0;
        while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
            const size_t found = text.find(sep, start);
            if (found == std::string_view::npos) break;
            parts.emplace_back(text.substr(start, found - start));
            start = found + sep.size();
        }
        parts.emplace_back(text.substr(start));
        return parts;
    }
    // Whitespace mode: runs of whitespace separate, empty strings never appear.
    const CodePoints cps = decode_all(text);
    size_t i = 0;
    const size_t n = cps.values.size();
    while (i < n) {
        while (i < n && is_python_space(cps.values[i])) ++i;
        if (i == n) break;
        if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
            parts.emplace_back(text.substr(cps.offsets[i]));  // Python keeps the rest as is
            break;
        }
        const size_t start = i;
        while (i < n && !is_python_space(cps.values[i])) ++i;
        parts.emplace_back(text.substr(cps.offsets[start], cps.offsets[i] - cps.offsets[start]));
    }
    return parts;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to,
                        int64_t max_count) {
    std::string result;
    if (from.empty()) {
        // Python inserts `to` before every code point and at the end.
        const std::vector<size_t> offsets = code_point_offsets(text);
        int64_t done = 0;
        for (size_t i = 0; i < offsets.size(); ++i) {
            if (max_count < 0 || done < max_count) {
                result += to;
                ++done;
            }
            if (i + 1 < offsets.size()) result += text.substr(offsets[i], offsets[i + 1] - offsets[i]);
        }
        return result;
    }
    size_t start = 0;
    int64_t done = 0;
    while (max_count < 0 || done < max_count) {
        const size_t found = text.find(from, start);
        if (found == std::string_view::npos) break;
        result += text.substr(start, found - start);
        result += to;
        start = found + from.size();
        ++done;
    }
    result += text.substr(start);
    return result;
}

namespace {

std::string icu_case(std::string_view text, bool upper) {
    icu::UnicodeString unicode =
        icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    if (upper) {
        unicode.toUpper(icu::Locale::getRoot());
    } else {
        unicode.toLower(icu::Locale::getRoot());
    }
    std::string result;
    unicode.toUTF8String(result);
    return result;
}

}  // namespace

std::string to_upper(std::string_view text) {
    return icu_case(text, true);
}
std::string to_lower(std::string_view text) {
    return icu_case(text, false);
}

std::string capitalize(std::string_view text) {
    if (text.empty()) return {};
    size_t pos = 0;
    const uint32_t first = decode_utf8(text, pos);
    // Python title-cases the first character (U+01C6 -> U+01C5, not U+01C4).
    std::string result;
    append_utf8(result, static_cast<uint32_t>(u_totitle(static_cast<UChar32>(first))));
    return result + to_lower(text.substr(pos));
}

std::string title_case(std::string_view text) {
    std::string result;
    bool word_start = true;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t start = pos;
        const uint32_t cp = decode_utf8(text, pos);
        const std::string_view piece = text.substr(start, pos - start);
        const bool separator =
            is_python_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
        if (separator) {
            result += piece;
            word_start = true;
        } else {
            result += word_start ? to_upper(piece) : to_lower(piece);
            word_start = false;
        }
    }
    return result;
}

}  // namespace lmrun::jinja
