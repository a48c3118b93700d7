// PCRE2 wrapper: Oniguruma-compatible \s, UTF/UCP semantics, byte-range matches.
#include "tokenizer/regex.h"

#include <gtest/gtest.h>

namespace lmrun {
namespace {

std::vector<std::string> matches(const std::string& pattern, const std::string& text) {
    auto regex = Regex::compile(pattern);
    EXPECT_TRUE(regex.ok()) << (regex.ok() ? "" : regex.error().message);
    std::vector<std::string> out;
    if (!regex.ok()) return out;
    for (const ByteRange& range : regex.value().find_all(text))
        out.push_back(text.substr(range.begin, range.end - range.begin));
    return out;
}

TEST(Regex, WhitespaceIncludesNextLine) {
    // U+0085 is Unicode White_Space (Oniguruma's \s) but not in PCRE2's own \s.
    EXPECT_EQ(matches(R"(\s+)", "a\xC2\x85 b"), std::vector<std::string>{"\xC2\x85 "});
    EXPECT_EQ(matches(R"([^\s]+)", "a\xC2\x85 b"), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(matches(R"(\S+)", "a\xC2\x85 b"), (std::vector<std::string>{"a", "b"}));
}

TEST(Regex, UnicodePropertiesAndCaseInsensitiveGroups) {
    EXPECT_EQ(matches(R"(\p{L}+|\p{N})", "h\xC3\xA9llo42"),
              (std::vector<std::string>{"h\xC3\xA9llo", "4", "2"}));
    EXPECT_EQ(matches(R"((?i:'s|'ll))", "IT'S we'LL"), (std::vector<std::string>{"'S", "'LL"}));
}

TEST(Regex, TranslationLeavesClassesAndEscapesIntact) {
    EXPECT_EQ(
        translate_whitespace_classes(R"([\]\s]\\s)"),
        std::string(
            R"([\]\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]\\s)"));
    EXPECT_EQ(translate_whitespace_classes(R"([]a]\p{L})"), std::string(R"([]a]\p{L})"));
}

TEST(Regex, InvalidPatternIsAnError) {
    auto regex = Regex::compile("(unclosed");
    ASSERT_FALSE(regex.ok());
    EXPECT_NE(regex.error().message.find("(unclosed"), std::string::npos);
}

TEST(Regex, LongInputs) {
    const std::string spaces(100000, ' ');
    EXPECT_EQ(matches(R"(\s+(?!\S)|\s+)", spaces + "x"),
              (std::vector<std::string>{std::string(99999, ' '), " "}));
    EXPECT_EQ(matches(R"(\p{L}+)", std::string(100000, 'a')).size(), 1u);
}

}  // namespace
}  // namespace lmrun
