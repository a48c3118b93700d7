// Added tokens: leftmost-longest matching and the lstrip / rstrip / single_word
// flags, on raw and normalized text.
#include "tokenizer/added_vocabulary.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace lmrun {
namespace {

using testing::from_json_text;

// "text|[id]|text" rendering of a split, for compact expectations.
std::string render_splits(const std::vector<TextSplit>& splits) {
    std::string out;
    for (const TextSplit& split : splits) {
        if (!out.empty()) out += "|";
        out += split.token_id ? "[" + std::to_string(*split.token_id) + "]" : split.text;
    }
    return out;
}

TEST(AddedVocabulary, LongestMatchAtTheLeftmostPosition) {
    const auto vocabulary = from_json_text<AddedVocabulary>(R"([
        {"id": 10, "content": "<a>", "special": true, "normalized": false},
        {"id": 11, "content": "<a><b>", "special": true, "normalized": false},
        {"id": 12, "content": "b><", "special": true, "normalized": false}])");
    EXPECT_EQ(render_splits(vocabulary.split("x<a><b>y<a>", false)), "x|[11]|y|[10]");
    EXPECT_EQ(render_splits(vocabulary.split("<a", false)), "<a");
    EXPECT_EQ(render_splits(vocabulary.split("", false)), "");
    // The content of a matched token does not also yield a later overlapping match.
    EXPECT_EQ(render_splits(vocabulary.split("<a><b><", false)), "[11]|<");
}

TEST(AddedVocabulary, StripFlagsAbsorbWhitespace) {
    const auto vocabulary = from_json_text<AddedVocabulary>(R"([
        {"id": 1, "content": "<L>", "lstrip": true, "special": true, "normalized": false},
        {"id": 2, "content": "<R>", "rstrip": true, "special": true, "normalized": false}])");
    EXPECT_EQ(render_splits(vocabulary.split("a  <L> b", false)), "a|[1]| b");
    EXPECT_EQ(render_splits(vocabulary.split("a <R> \t b", false)), "a |[2]|b");
    const auto splits = vocabulary.split("a  <L>", false);
    ASSERT_EQ(splits.size(), 2u);
    EXPECT_EQ(splits[1].text, "  <L>");
}

TEST(AddedVocabulary, SingleWordRejectsMatchesInsideWords) {
    const auto vocabulary = from_json_text<AddedVocabulary>(
        R"([{"id": 5, "content": "ab", "single_word": true, "special": false, "normalized": false}])");
    EXPECT_EQ(render_splits(vocabulary.split("ab cab abc ab", false)), "[5]| cab abc |[5]");
}

TEST(AddedVocabulary, NormalizedTokensMatchNormalizedText) {
    auto vocabulary =
        from_json_text<AddedVocabulary>(R"([{"id": 7, "content": "Hi", "special": false, "normalized": true},
                               {"id": 8, "content": "<s>", "special": true, "normalized": false}])");
    EXPECT_TRUE(vocabulary.has_normalized_tokens());
    EXPECT_EQ(render_splits(vocabulary.split("Hi<s>", false)), "Hi|[8]");
    vocabulary.normalize_contents([](const std::string& text) { return "_" + text; });
    EXPECT_EQ(render_splits(vocabulary.split("_Hi", true)), "[7]");
    EXPECT_EQ(render_splits(vocabulary.split("Hi", true)), "Hi");
}

TEST(AddedVocabulary, LookupsAndErrors) {
    const auto vocabulary = from_json_text<AddedVocabulary>(
        R"([{"id": 3, "content": "<x>", "special": true, "normalized": false}])");
    EXPECT_EQ(vocabulary.find_by_content("<x>"), 3);
    EXPECT_FALSE(vocabulary.find_by_content("<y>").has_value());
    ASSERT_NE(vocabulary.find_by_id(3), nullptr);
    EXPECT_TRUE(vocabulary.find_by_id(3)->special);
    EXPECT_EQ(vocabulary.find_by_id(4), nullptr);
    EXPECT_FALSE(AddedVocabulary::from_json(nlohmann::json::parse(R"([{"id": 1, "content": ""}])")).ok());
    EXPECT_FALSE(AddedVocabulary::from_json(nlohmann::json::parse(R"({"id": 1})")).ok());
}

}  // namespace
}  // namespace lmrun
