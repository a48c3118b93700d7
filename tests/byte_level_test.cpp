// GPT-2 byte alphabet: a bijection between bytes and printable code points.
#include "tokenizer/byte_level.h"

#include <set>

#include <gtest/gtest.h>

#include "tokenizer/unicode.h"

namespace lmrun {
namespace {

TEST(ByteLevel, KnownMappings) {
    const auto& table = byte_level::byte_to_char_table();
    EXPECT_EQ(table['A'], "A");
    EXPECT_EQ(table[' '], "\xC4\xA0");   // U+0120 'Ġ'
    EXPECT_EQ(table['\n'], "\xC4\x8A");  // U+010A 'Ċ'
    EXPECT_EQ(table[0xE9], "\xC3\xA9");  // Latin-1 printable: itself
    EXPECT_EQ(table[0xAD], "\xC5\x83");  // soft hyphen is remapped, to U+0143
}

TEST(ByteLevel, IsABijection) {
    const auto& table = byte_level::byte_to_char_table();
    std::set<std::string> distinct(table.begin(), table.end());
    EXPECT_EQ(distinct.size(), 256u);
    for (int byte = 0; byte < 256; ++byte) {
        size_t pos = 0;
        const char32_t cp = unicode::next_code_point(table[byte], pos);
        EXPECT_EQ(byte_level::char_to_byte(cp), static_cast<unsigned char>(byte));
    }
    EXPECT_FALSE(byte_level::char_to_byte(U'\u4E2D').has_value());
    EXPECT_FALSE(byte_level::char_to_byte(U' ').has_value());
}

}  // namespace
}  // namespace lmrun
