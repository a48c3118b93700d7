#include "tokenizer/jinja/text_util.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "tokenizer/jinja/render_budget.h"

namespace lmrun::jinja {

uint32_t decode_utf8(std::string_view text, size_t& pos) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
    const uint8_t lead = byte(pos);
    size_t length = 0;
    uint32_t cp = 0;
    if ((lead & 0xE0) == 0xC0) {
        length = 2;
        cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3;
        cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4;
        cp = lead & 0x07;
    } else {  // ASCII, or a byte that cannot start a sequence: taken as itself
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
    spend_bytes(text.size());
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
    spend_bytes(text.size());
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

std::string python_strip(std::string_view text, StripSide side, std::string_view chars, bool chars_given) {
    spend_bytes(text.size());
    std::vector<uint32_t> strip_set;
    for (size_t pos = 0; chars_given && pos < chars.size();) strip_set.push_back(decode_utf8(chars, pos));
    const auto strippable = [&](uint32_t cp) {
        if (!chars_given) return is_python_space(cp);
        for (uint32_t c : strip_set)
            if (c == cp) return true;
        return false;
    };
    // One forward pass: where the first kept code point starts, where the last one ends.
    size_t begin = text.size();
    size_t end = 0;
    for (size_t pos = 0; pos < text.size();) {
        const size_t start = pos;
        if (strippable(decode_utf8(text, pos))) continue;
        if (begin == text.size()) begin = start;
        end = pos;
    }
    if (begin == text.size()) return std::string();  // every code point strippable
    if (side == StripSide::Right) begin = 0;
    if (side == StripSide::Left) end = text.size();
    return std::string(text.substr(begin, end - begin));
}

Result<std::vector<std::string>> python_split(std::string_view text, std::string_view sep, bool sep_given,
                                              int64_t max_split) {
    spend_bytes(text.size());
    std::vector<std::string> parts;
    // Every piece becomes a Value of its own: their number is bounded like any list's.
    const auto add = [&parts](std::string_view piece) {
        if (parts.size() >= kMaxListItems) return false;
        parts.emplace_back(piece);
        return true;
    };
    const Error too_many =
        make_error(ErrorKind::ResourceExhausted, "split() result has more than {} items", kMaxListItems);
    if (sep_given) {
        size_t start = 0;
        while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
            const size_t found = text.find(sep, start);
            if (found == std::string_view::npos) break;
            if (!add(text.substr(start, found - start))) return too_many;
            start = found + sep.size();
        }
        if (!add(text.substr(start))) return too_many;
        return parts;
    }
    // Whitespace mode: runs of whitespace separate, empty strings never appear.
    size_t pos = 0;
    while (true) {
        size_t start = pos;  // skip whitespace
        while (start < text.size()) {
            size_t next = start;
            if (!is_python_space(decode_utf8(text, next))) break;
            start = next;
        }
        if (start == text.size()) break;
        if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
            if (!add(text.substr(start))) return too_many;  // Python keeps the rest as is
            break;
        }
        size_t end = start;
        while (end < text.size()) {
            size_t next = end;
            if (is_python_space(decode_utf8(text, next))) break;
            end = next;
        }
        if (!add(text.substr(start, end - start))) return too_many;
        pos = end;
    }
    return parts;
}

Result<std::string> replace_all(std::string_view text, std::string_view from, std::string_view to,
                                int64_t max_count) {
    spend_bytes(text.size());
    // Counted first: the result is checked against the value limit before it is built.
    uint64_t count = 0;
    if (from.empty()) {
        count = code_point_count(text) + 1;
    } else {
        for (size_t pos = text.find(from); pos != std::string_view::npos;
             pos = text.find(from, pos + from.size()))
            ++count;
    }
    if (max_count >= 0) count = std::min<uint64_t>(count, uint64_t(max_count));
    const uint64_t result_bytes =
        saturating_add(text.size() - count * from.size(), saturating_mul(count, to.size()));
    LMRUN_RETURN_IF_ERROR(check_value_bytes(result_bytes, "replace() result"));
    std::string result;
    result.reserve(result_bytes);
    if (from.empty()) {
        // Python inserts `to` before every code point and at the end.
        uint64_t done = 0;
        for (size_t pos = 0;;) {
            if (done < count) {
                result += to;
                ++done;
            }
            if (pos == text.size()) break;
            const size_t start = pos;
            decode_utf8(text, pos);
            result += text.substr(start, pos - start);
        }
        return result;
    }
    size_t start = 0;
    for (uint64_t done = 0; done < count; ++done) {
        const size_t found = text.find(from, start);
        result += text.substr(start, found - start);
        result += to;
        start = found + from.size();
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
