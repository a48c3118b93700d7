// Regex to grammar: every string over a small alphabet (all of them up to a
// length, then random longer ones) is accepted by the compiled regex iff
// std::regex (ECMAScript) matches it in full; unsupported constructs and
// malformed patterns are errors that say what is wrong; JSON-string mode emits
// the escaped form.
#include "structured/regex_converter.h"

#include <random>
#include <regex>

#include <gtest/gtest.h>

#include "structured/grammar_matcher.h"
#include "structured_test_util.h"

namespace lmrun::structured {
namespace {

struct RegexCase {
    const char* pattern;
    std::string alphabet;
};

const std::vector<RegexCase> kCases = {
    {"a(b|c)*d", "abcd"},          {"[a-c]{2,4}x?", "abcx"},
    {"(ab|a)(c|bcd)(d*)", "abcd"}, {"\\d+(\\.\\d{1,2})?", "09.a"},
    {"[^ab]+b", "abc\n"},          {"(a|b)*abb", "ab"},
    {".{2}c", "ac\n\r"},           {"x(y{0,2}z)+", "xyz"},
    {"[\\w.]+@\\w+", "a_.@-"},     {"a?b?c?", "abc"},
    {"^(?:ab)+$", "ab"},           {"(?<year>\\d{2})-(?P<month>1[0-2]|0[1-9])", "0129-"},
    {"[\\s,]+x", " ,\tx"},         {"\\x41\\u0042[\\x43-\\x44]", "ABCDE"},
    {"a{2}|b{1,}|c{0,1}", "abc"},  {"[-a]+[b-]", "ab-"},
    {"(a+?)(b*?)", "ab"},          {"\\.\\*\\+\\?", ".*+?"},
    {"\\(\\)\\[\\]", "()[]"},      {"\\{\\}\\|\\\\", "{}|\\"},
    {"[^\\d\\s]{1,3}", "a1 b"},
};

std::shared_ptr<const CompiledGrammar> compile_regex(const char* pattern, const std::string& alphabet) {
    auto grammar = grammar_from_regex(pattern);
    EXPECT_TRUE(grammar.ok()) << pattern << ": " << (grammar.ok() ? "" : grammar.error().message);
    return testing::compile_or_die(*grammar, testing::random_vocabulary(alphabet, 30, 3, 1));
}

// std::regex has no named groups: the reference sees them as plain groups.
std::string without_group_names(const std::string& pattern) {
    return std::regex_replace(pattern, std::regex(R"(\(\?P?<[a-z]+>)"), "(");
}

bool accepts(const std::shared_ptr<const CompiledGrammar>& compiled, const std::string& text) {
    GrammarMatcher matcher(compiled);
    return matcher.accept_bytes(text) && matcher.can_end();
}

TEST(RegexConverter, AcceptsExactlyWhatStdRegexMatches) {
    std::mt19937_64 rng(5);
    for (const RegexCase& c : kCases) {
        auto compiled = compile_regex(c.pattern, c.alphabet);
        const std::regex reference(without_group_names(c.pattern), std::regex::ECMAScript);
        std::vector<std::string> texts{""}, layer{""};
        for (int length = 1; length <= 6; ++length) {
            std::vector<std::string> next;
            for (const std::string& prefix : layer) {
                for (char ch : c.alphabet) next.push_back(prefix + ch);
            }
            texts.insert(texts.end(), next.begin(), next.end());
            layer = std::move(next);
        }
        for (int i = 0; i < 2000; ++i) {
            std::string text;
            for (size_t n = 7 + rng() % 10; n > 0; --n) text.push_back(c.alphabet[rng() % c.alphabet.size()]);
            texts.push_back(text);
        }
        int matched = 0;
        for (const std::string& text : texts) {
            const bool expected = std::regex_match(text, reference);
            matched += expected;
            ASSERT_EQ(accepts(compiled, text), expected) << "/" << c.pattern << "/ on \"" << text << "\"";
        }
        EXPECT_GT(matched, 0) << c.pattern;
    }
}

TEST(RegexConverter, ErrorsNameTheProblem) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {"(ab", "missing ')'"},      {"ab)", "unbalanced ')'"},      {"a{3,1}", "maximum below its minimum"},
        {"(?=a)b", "lookaround"},    {"(a)\\1", "backreferences"},   {"a^b", "anchors"},
        {"a$b", "anchors"},          {"[b-a]", "out of order"},      {"\\bword", "word boundaries"},
        {"*a", "nothing to repeat"}, {"(?i)a", "inline flags"},      {"a++", "possessive"},
        {"[abc", "unterminated"},    {"\\p{L}", "Unicode property"},
    };
    for (const auto& [pattern, expected] : cases) {
        auto grammar = grammar_from_regex(pattern);
        ASSERT_FALSE(grammar.ok()) << pattern;
        EXPECT_NE(grammar.error().message.find(expected), std::string::npos)
            << pattern << ": " << grammar.error().message;
    }
}

TEST(RegexConverter, PatternThatMatchesNothingFailsToCompile) {
    for (const char* pattern : {"[]", "a[]b", "[^\\s\\S]+"}) {
        auto grammar = grammar_from_regex(pattern);
        ASSERT_TRUE(grammar.ok()) << pattern;
        auto compiled = CompiledGrammar::compile(*grammar, testing::random_vocabulary("ab", 5, 2, 1));
        ASSERT_FALSE(compiled.ok()) << pattern;
        EXPECT_NE(compiled.error().message.find("matches no string"), std::string::npos);
    }
}

TEST(RegexConverter, JsonStringModeEmitsEscapedText) {
    Grammar grammar;
    auto body = add_regex(grammar, "a\"b\\\\c\\n[\\x01]", RegexOptions{.json_string = true});
    ASSERT_TRUE(body.ok()) << body.error().message;
    grammar.set_root(grammar.add_rule("root", *body));
    auto compiled = testing::compile_or_die(grammar, testing::random_vocabulary("ab\"\\cnu01", 10, 2, 1));
    EXPECT_TRUE(accepts(compiled, "a\\\"b\\\\c\\n\\u0001"));
    EXPECT_FALSE(accepts(compiled, "a\"b\\c\n\x01"));
}

TEST(RegexConverter, SearchModeMatchesAnywhereUnlessAnchored) {
    auto compile_search = [](const char* pattern) {
        Grammar grammar;
        auto body = add_regex(grammar, pattern, RegexOptions{.search = true});
        EXPECT_TRUE(body.ok());
        grammar.set_root(grammar.add_rule("root", *body));
        return testing::compile_or_die(grammar, testing::random_vocabulary("abx", 10, 2, 1));
    };
    auto unanchored = compile_search("ab");
    EXPECT_TRUE(accepts(unanchored, "xxabx"));
    EXPECT_FALSE(accepts(unanchored, "xxax"));
    auto anchored = compile_search("^ab");
    EXPECT_TRUE(accepts(anchored, "abxx"));
    EXPECT_FALSE(accepts(anchored, "xab"));
}

}  // namespace
}  // namespace lmrun::structured
