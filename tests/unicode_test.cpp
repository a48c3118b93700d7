// UTF-8 helpers: lossy decoding follows the Unicode "maximal subpart" practice
// (Unicode 15 §3.9, Table 3-8 example), which is what Rust's from_utf8_lossy does.
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace lmrun::unicode {
namespace {

const std::string kFffd(kReplacementChar);

TEST(Unicode, LossyDecodingUsesMaximalSubparts) {
    // The example of Unicode Table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
    const std::string bytes = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
    EXPECT_EQ(utf8_lossy(bytes), "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
}

TEST(Unicode, LossyDecodingRejectsOverlongsSurrogatesAndOutOfRange) {
    EXPECT_EQ(utf8_lossy("\xC0\xAF"), kFffd + kFffd);                          // overlong '/'
    EXPECT_EQ(utf8_lossy("\xE0\x80\xAF"), kFffd + kFffd + kFffd);              // overlong, E0 needs A0..BF
    EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // surrogate D800
    EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
    EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), kFffd);                              // truncated emoji: one subpart
    EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");             // complete emoji
    EXPECT_EQ(utf8_lossy(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Unicode, Validation) {
    EXPECT_TRUE(is_valid_utf8(""));
    EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xE4\xB8\xAD \xF4\x8F\xBF\xBF"));
    EXPECT_FALSE(is_valid_utf8("\xC3"));
    EXPECT_FALSE(is_valid_utf8("\xED\xBF\xBF"));
    EXPECT_FALSE(is_valid_utf8("\xFF"));
}

TEST(Unicode, CodePointRoundTrip) {
    for (char32_t cp : {U'a', U'\u00E9', U'\u4E2D', U'\U0001F600', U'\U0010FFFF'}) {
        std::string encoded;
        append_utf8(encoded, cp);
        size_t pos = 0;
        EXPECT_EQ(next_code_point(encoded, pos), cp);
        EXPECT_EQ(pos, encoded.size());
    }
}

TEST(Unicode, PredicatesFollowUnicodeProperties) {
    EXPECT_TRUE(is_whitespace(U' '));
    EXPECT_TRUE(is_whitespace(U'\u0085'));  // NEL is White_Space
    EXPECT_TRUE(is_whitespace(U'\u3000'));
    EXPECT_FALSE(is_whitespace(U'\u200B'));  // ZERO WIDTH SPACE is not
    EXPECT_TRUE(is_alphanumeric(U'\u00E9'));
    EXPECT_TRUE(is_alphanumeric(U'\u0663'));  // ARABIC-INDIC DIGIT THREE
    EXPECT_FALSE(is_alphanumeric(U'-'));
}

TEST(Unicode, NormalForms) {
    const std::string decomposed = "e\xCC\x81";  // e + COMBINING ACUTE
    const std::string composed = "\xC3\xA9";     // é
    EXPECT_EQ(normalize(decomposed, NormalForm::Nfc), composed);
    EXPECT_EQ(normalize(composed, NormalForm::Nfd), decomposed);
    EXPECT_EQ(normalize("\xEF\xAC\x81", NormalForm::Nfkc), "fi");       // U+FB01 ligature
    EXPECT_EQ(normalize("\xE2\x84\xAB", NormalForm::Nfc), "\xC3\x85");  // ANGSTROM SIGN -> Å
    EXPECT_EQ(to_lowercase("HeLLo \xC3\x89"), "hello \xC3\xA9");
}

}  // namespace
}  // namespace lmrun::unicode
