// Post-processors: which special ids surround a single encoded sequence.
#include "tokenizer/post_processor.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace lmrun {
namespace {

std::vector<int32_t> apply(const std::string& json, std::vector<int32_t> ids) {
    auto processor = PostProcessor::from_json(nlohmann::json::parse(json));
    EXPECT_TRUE(processor.ok()) << (processor.ok() ? "" : processor.error().message);
    if (processor.ok()) processor.value().apply(ids);
    return ids;
}

TEST(PostProcessor, TemplateProcessing) {
    const std::string spec = R"({"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                           "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}})";
    EXPECT_EQ(apply(spec, {7, 8}), (std::vector<int32_t>{1, 7, 8, 2}));
}

TEST(PostProcessor, BertRobertaByteLevelSequence) {
    EXPECT_EQ(apply(R"({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]})", {5}),
              (std::vector<int32_t>{0, 5, 2}));
    EXPECT_EQ(apply(R"({"type": "Sequence", "processors": [{"type": "ByteLevel"}]})", {5}),
              std::vector<int32_t>{5});
}

TEST(PostProcessor, ErrorsNameTheProblem) {
    auto unknown = PostProcessor::from_json(nlohmann::json::parse(R"({"type": "Mystery"})"));
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("Mystery"), std::string::npos);
    auto missing = PostProcessor::from_json(nlohmann::json::parse(
        R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>"}}], "special_tokens": {}})"));
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("<x>"), std::string::npos);
}

}  // namespace
}  // namespace lmrun
