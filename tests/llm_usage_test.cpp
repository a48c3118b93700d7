// The usage example in src/engine/llm.h's opening comment, compiled and run: CMake copies the
// lines between its usage-begin and usage-end markers into llm_usage_example.inc.
#include <gtest/gtest.h>

#include "engine/llm.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

Result<std::string> run_usage_example(const std::string& model_dir) {
#include "llm_usage_example.inc"
    return text;
}

TEST(LLMUsage, HeaderExampleCompilesAndContinuesThePrompt) {
    Result<std::string> text = run_usage_example(testdata_path("stories260k"));
    ASSERT_TRUE(text.ok()) << text.error().message;
    // Greedy: the start of the golden continuation of "Once upon a time".
    const nlohmann::json expected = read_json_file(testdata_path("stories260k/expected.json"));
    std::string golden;
    for (const auto& item : expected["cases"]) {
        if (item["prompt_text"] == "Once upon a time")
            golden = item["decoded_text_prompt_plus_output"].get<std::string>().substr(16);
    }
    ASSERT_FALSE(text.value().empty());
    EXPECT_EQ(golden.substr(0, text.value().size()), text.value());
}

}  // namespace
}  // namespace lmrun::testing
