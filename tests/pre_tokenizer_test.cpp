// Pre-tokenizers: the five Split behaviours on the example of HF's
// SplitDelimiterBehavior documentation, ByteLevel mapping and prefix space.
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace lmrun {
namespace {

using Pieces = std::vector<std::string>;

Pieces split_dashes(SplitBehavior behavior) {
    return split_text("the-final--countdown", Pattern::literal("-"), behavior, false);
}

TEST(PreTokenizer, SplitBehaviorsMatchHfDocumentation) {
    EXPECT_EQ(split_dashes(SplitBehavior::Removed), (Pieces{"the", "final", "countdown"}));
    EXPECT_EQ(split_dashes(SplitBehavior::Isolated), (Pieces{"the", "-", "final", "-", "-", "countdown"}));
    EXPECT_EQ(split_dashes(SplitBehavior::MergedWithPrevious), (Pieces{"the-", "final-", "-", "countdown"}));
    EXPECT_EQ(split_dashes(SplitBehavior::MergedWithNext), (Pieces{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(split_dashes(SplitBehavior::Contiguous), (Pieces{"the", "-", "final", "--", "countdown"}));
}

TEST(PreTokenizer, InvertedSplitKeepsTheMatches) {
    EXPECT_EQ(split_text("ab12cd", Pattern::literal("12"), SplitBehavior::Removed, /*invert=*/true),
              Pieces{"12"});
}

TEST(PreTokenizer, SequenceOfSplitAndByteLevel) {
    const auto spec = nlohmann::json::parse(R"({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\s+|\\S+"}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
    auto pre_tokenizer = PreTokenizer::from_json(spec);
    ASSERT_TRUE(pre_tokenizer.ok()) << pre_tokenizer.error().message;
    // Space -> U+0120 'Ġ', newline -> U+010A 'Ċ', é (C3 A9) -> 'Ã' '©' (GPT-2 byte alphabet).
    EXPECT_EQ(pre_tokenizer.value().pre_tokenize("a \n\xC3\xA9"),
              (Pieces{"a", "\xC4\xA0\xC4\x8A", "\xC3\x83\xC2\xA9"}));
}

TEST(PreTokenizer, ByteLevelWithPrefixSpaceAndRegex) {
    auto pre_tokenizer = PreTokenizer::from_json(
        nlohmann::json::parse(R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})"));
    ASSERT_TRUE(pre_tokenizer.ok());
    EXPECT_EQ(pre_tokenizer.value().pre_tokenize("Hello world's"),
              (Pieces{"\xC4\xA0Hello", "\xC4\xA0world", "'s"}));
}

TEST(PreTokenizer, NullSpecKeepsTextWhole) {
    auto pre_tokenizer = PreTokenizer::from_json(nullptr);
    ASSERT_TRUE(pre_tokenizer.ok());
    EXPECT_EQ(pre_tokenizer.value().pre_tokenize("a b"), Pieces{"a b"});
    EXPECT_EQ(pre_tokenizer.value().pre_tokenize(""), Pieces{});
}

TEST(PreTokenizer, UnsupportedTypeAndBehaviorAreErrors) {
    auto unsupported = PreTokenizer::from_json(nlohmann::json::parse(R"({"type": "Digits"})"));
    ASSERT_FALSE(unsupported.ok());
    EXPECT_NE(unsupported.error().message.find("Digits"), std::string::npos);
    auto bad_behavior = PreTokenizer::from_json(nlohmann::json::parse(
        R"({"type": "Split", "pattern": {"String": "-"}, "behavior": "Sideways", "invert": false})"));
    ASSERT_FALSE(bad_behavior.ok());
    EXPECT_NE(bad_behavior.error().message.find("Sideways"), std::string::npos);
}

}  // namespace
}  // namespace lmrun

namespace lmrun {
namespace {

TEST(PreTokenizer, MetaspacePrependSchemes) {
    auto make = [](const std::string& scheme, bool split) {
        auto pre_tokenizer = PreTokenizer::from_json({{"type", "Metaspace"},
                                                      {"replacement", "\xE2\x96\x81"},
                                                      {"prepend_scheme", scheme},
                                                      {"split", split}});
        EXPECT_TRUE(pre_tokenizer.ok());
        return std::move(pre_tokenizer).value();
    };
    const std::string m = "\xE2\x96\x81";  // ▁
    EXPECT_EQ(make("always", true).pre_tokenize("Hey you", false), (Pieces{m + "Hey", m + "you"}));
    EXPECT_EQ(make("always", false).pre_tokenize(" Hey", false), Pieces{m + "Hey"});  // no double prefix
    EXPECT_EQ(make("first", false).pre_tokenize("Hey", true), Pieces{m + "Hey"});
    EXPECT_EQ(make("first", false).pre_tokenize("Hey", false), Pieces{"Hey"});
    EXPECT_EQ(make("never", false).pre_tokenize("a b", true), Pieces{"a" + m + "b"});
}

}  // namespace
}  // namespace lmrun
