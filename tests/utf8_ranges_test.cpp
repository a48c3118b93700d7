// UTF-8 byte patterns of code point ranges: for ranges with awkward edges, every
// code point in the range is matched by exactly one sequence, and no encoding of
// a code point outside the range is matched.
#include "structured/utf8_ranges.h"

#include <gtest/gtest.h>

#include "tokenizer/unicode.h"

namespace lmrun::structured {
namespace {

bool sequence_matches(const Utf8Sequence& sequence, const std::string& bytes) {
    if (sequence.size() != bytes.size()) return false;
    for (size_t i = 0; i < bytes.size(); ++i) {
        const uint8_t b = static_cast<uint8_t>(bytes[i]);
        if (b < sequence[i].first || b > sequence[i].last) return false;
    }
    return true;
}

void expect_exact(CodepointRange range) {
    const auto sequences = utf8_sequences(range);
    const char32_t lo = range.first > 0x300 ? range.first - 0x300 : 0;
    const char32_t hi = std::min<char32_t>(range.last + 0x300, 0x10FFFF);
    for (char32_t cp = lo; cp <= hi; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        std::string bytes;
        unicode::append_utf8(bytes, cp);
        int matches = 0;
        for (const auto& sequence : sequences) matches += sequence_matches(sequence, bytes);
        const bool inside = cp >= range.first && cp <= range.last;
        ASSERT_EQ(matches, inside ? 1 : 0) << std::hex << "U+" << uint32_t(cp) << " in ["
                                           << uint32_t(range.first) << ", " << uint32_t(range.last) << "]";
    }
}

TEST(Utf8Ranges, EveryCodePointMatchedExactlyOnce) {
    expect_exact({0, 0x7F});
    expect_exact({0x41, 0x5A});
    expect_exact({0x70, 0x90});
    expect_exact({0x7FF, 0x801});
    expect_exact({0x123, 0x1234});
    expect_exact({0x800, 0xD7FF});
    expect_exact({0xE000, 0xFFFF});
    expect_exact({0xFFF0, 0x10010});
    expect_exact({0x10000, 0x10FFFF});
    expect_exact({0x1F600, 0x1F64F});
    expect_exact({0x3FFFF, 0x40001});
}

TEST(Utf8Ranges, WholeRangeNeedsFewSequences) {
    size_t total = 0;
    for (auto range : {CodepointRange{0, 0xD7FF}, CodepointRange{0xE000, 0x10FFFF}})
        total += utf8_sequences(range).size();
    EXPECT_LE(total, 10u);
}

}  // namespace
}  // namespace lmrun::structured
