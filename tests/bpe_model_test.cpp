// BPE model: merge order by rank with leftmost tie-break, byte fallback, unk
// handling, subword prefix, and malformed vocab/merges.
#include "tokenizer/bpe_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace lmrun {
namespace {

using testing::from_json_text;

std::vector<int32_t> encode(const BpeModel& model, const std::string& piece) {
    std::vector<int32_t> ids;
    model.encode_piece(piece, ids);
    return ids;
}

TEST(BpeModel, LowerRankMergesFirst) {
    const std::string vocab = R"("vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5})";
    const auto bc_first = from_json_text<BpeModel>("{" + vocab + R"(, "merges": ["b c", "a b", "ab c"]})");
    EXPECT_EQ(encode(bc_first, "abc"), (std::vector<int32_t>{0, 4}));
    const auto ab_first =
        from_json_text<BpeModel>("{" + vocab + R"(, "merges": [["a", "b"], ["b", "c"], ["ab", "c"]]})");
    EXPECT_EQ(encode(ab_first, "abc"), (std::vector<int32_t>{5}));
    EXPECT_EQ(encode(ab_first, "abc"), (std::vector<int32_t>{5}));  // cached
    EXPECT_EQ(encode(ab_first, ""), (std::vector<int32_t>{}));
}

TEST(BpeModel, EqualRanksMergeLeftmostFirst) {
    const auto model = from_json_text<BpeModel>(R"({"vocab": {"a": 0, "aa": 1}, "merges": ["a a"]})");
    EXPECT_EQ(encode(model, "aaa"), (std::vector<int32_t>{1, 0}));
    EXPECT_EQ(encode(model, "aaaa"), (std::vector<int32_t>{1, 1}));
}

TEST(BpeModel, ByteFallbackAndUnknowns) {
    const auto fallback =
        from_json_text<BpeModel>(R"({"vocab": {"<unk>": 0, "<0xC3>": 1, "<0xA9>": 2, "a": 3}, "merges": [],
                                  "unk_token": "<unk>", "byte_fallback": true})");
    EXPECT_EQ(encode(fallback,
                     "a\xC3\xA9"
                     "a"),
              (std::vector<int32_t>{3, 1, 2, 3}));
    EXPECT_EQ(encode(fallback, "a\xE4\xB8\xAD"), (std::vector<int32_t>{3, 0}));  // bytes missing: unk
    const std::string unk_vocab = R"("vocab": {"<unk>": 0, "a": 1}, "merges": [], "unk_token": "<unk>")";
    EXPECT_EQ(encode(from_json_text<BpeModel>("{" + unk_vocab + R"(, "fuse_unk": true})"), "xya"),
              (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(encode(from_json_text<BpeModel>("{" + unk_vocab + R"(, "fuse_unk": false})"), "xya"),
              (std::vector<int32_t>{0, 0, 1}));
    // Without an unk token, unknown characters are dropped.
    EXPECT_EQ(encode(from_json_text<BpeModel>(R"({"vocab": {"a": 0}, "merges": []})"), "xa"),
              (std::vector<int32_t>{0}));
}

TEST(BpeModel, ContinuingSubwordPrefix) {
    const auto model =
        from_json_text<BpeModel>(R"({"vocab": {"a": 0, "##b": 1, "ab": 2, "b": 3}, "merges": ["a ##b"],
                               "continuing_subword_prefix": "##"})");
    EXPECT_EQ(encode(model, "ab"), (std::vector<int32_t>{2}));
    EXPECT_EQ(encode(model, "b"), (std::vector<int32_t>{3}));
}

TEST(BpeModel, VocabLookups) {
    const auto model = from_json_text<BpeModel>(R"({"vocab": {"a": 0, "c": 2}, "merges": []})");
    EXPECT_EQ(model.num_ids(), 3);
    EXPECT_EQ(model.token_to_id("c"), 2);
    EXPECT_FALSE(model.token_to_id("b").has_value());
    ASSERT_NE(model.id_to_token(2), nullptr);
    EXPECT_EQ(*model.id_to_token(2), "c");
    EXPECT_EQ(model.id_to_token(1), nullptr);  // hole in the id range
    EXPECT_EQ(model.id_to_token(3), nullptr);
    EXPECT_EQ(model.id_to_token(-1), nullptr);
}

TEST(BpeModel, MalformedDefinitionsAreErrors) {
    for (const char* json : {
             R"({"vocab": {"a": 0}, "merges": ["a"]})",
             R"({"vocab": {"a": 0}, "merges": ["a b"]})",
             R"({"vocab": {"a": -1}, "merges": []})",
             R"({"vocab": {"a": 0, "b": 0}, "merges": []})",
             R"({"vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"})",
             R"({"vocab": {"a": 0}, "merges": [], "dropout": 0.1})",
             R"({"type": "WordPiece", "vocab": {"a": 0}})",
             R"({"merges": []})",
         }) {
        EXPECT_FALSE(BpeModel::from_json(nlohmann::json::parse(json)).ok()) << json;
    }
}

}  // namespace
}  // namespace lmrun
