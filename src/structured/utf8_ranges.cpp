#include "structured/utf8_ranges.h"

#include <algorithm>
#include <array>

namespace lmrun::structured {
namespace {

int encoded_length(char32_t cp) {
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

std::array<uint8_t, 4> encode(char32_t cp, int length) {
    std::array<uint8_t, 4> bytes{};
    switch (length) {
        case 1:
            bytes[0] = uint8_t(cp);
            break;
        case 2:
            bytes[0] = uint8_t(0xC0 | (cp >> 6));
            bytes[1] = uint8_t(0x80 | (cp & 0x3F));
            break;
        case 3:
            bytes[0] = uint8_t(0xE0 | (cp >> 12));
            bytes[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
            bytes[2] = uint8_t(0x80 | (cp & 0x3F));
            break;
        default:
            bytes[0] = uint8_t(0xF0 | (cp >> 18));
            bytes[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
            bytes[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
            bytes[3] = uint8_t(0x80 | (cp & 0x3F));
            break;
    }
    return bytes;
}

// [first, last] share an encoded length. Splits until every continuation byte
// position spans a full aligned block, so that the per-byte ranges form a product.
void split_same_length(char32_t first, char32_t last, int length, std::vector<Utf8Sequence>& out) {
    for (int i = 1; i < length; ++i) {
        const char32_t low_bits = (char32_t(1) << (6 * i)) - 1;
        if ((first & ~low_bits) != (last & ~low_bits)) {
            if ((first & low_bits) != 0) {
                split_same_length(first, first | low_bits, length, out);
                split_same_length((first | low_bits) + 1, last, length, out);
                return;
            }
            if ((last & low_bits) != low_bits) {
                split_same_length(first, (last & ~low_bits) - 1, length, out);
                split_same_length(last & ~low_bits, last, length, out);
                return;
            }
        }
    }
    auto a = encode(first, length);
    auto b = encode(last, length);
    Utf8Sequence sequence;
    for (int i = 0; i < length; ++i) sequence.push_back(ByteRange{a[size_t(i)], b[size_t(i)]});
    out.push_back(std::move(sequence));
}

}  // namespace

std::vector<Utf8Sequence> utf8_sequences(CodepointRange range) {
    std::vector<Utf8Sequence> out;
    constexpr char32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
    char32_t first = range.first;
    while (first <= range.last) {
        const int length = encoded_length(first);
        const char32_t end = std::min(range.last, kLengthEnds[length - 1]);
        split_same_length(first, end, length, out);
        if (end == range.last) break;
        first = end + 1;
    }
    return out;
}

}  // namespace lmrun::structured
