#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "test_util.h"

namespace lmrun {
namespace {

// Python dicts keep insertion order and `tojson` prints keys in that order, so
// the goldens are read as ordered_json (nlohmann::json would sort the keys).
nlohmann::ordered_json read_ordered_json(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    return nlohmann::ordered_json::parse(in);
}

ChatTemplate load_qwen3_template() {
    const nlohmann::ordered_json config =
        read_ordered_json(testing::testdata_path("qwen3-tokenizer/tokenizer_config.json"));
    Result<ChatTemplate> parsed = ChatTemplate::from_tokenizer_config(config, "qwen3 tokenizer_config.json");
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
    return parsed.ok() ? std::move(parsed).value() : ChatTemplate::parse("").value();
}

ChatTemplateOptions options_from_kwargs(const nlohmann::ordered_json& kwargs) {
    ChatTemplateOptions options;
    for (const auto& [key, value] : kwargs.items()) {
        if (key == "add_generation_prompt") {
            options.add_generation_prompt = value.get<bool>();
        } else {
            options.extra_kwargs[key] = value;
        }
    }
    return options;
}

// All 14 cases rendered by Python jinja2 3.1.2 with HF's settings (and
// @huggingface/jinja): the prompt must match byte for byte.
TEST(ChatTemplate, Qwen3GoldensMatchByteForByte) {
    const ChatTemplate chat_template = load_qwen3_template();
    const nlohmann::ordered_json cases =
        read_ordered_json(testing::testdata_path("qwen3-tokenizer/chat_template_golden.json"));
    ASSERT_EQ(cases.size(), 14u);
    for (const auto& test_case : cases) {
        SCOPED_TRACE(test_case["name"].get<std::string>());
        const ChatTemplateOptions options = options_from_kwargs(test_case["kwargs"]);
        Result<std::string> rendered = chat_template.apply(test_case["messages"], options);
        ASSERT_TRUE(rendered.ok()) << rendered.error().message;
        EXPECT_EQ(rendered.value(), test_case["rendered"].get<std::string>());
    }
}

TEST(ChatTemplate, RenderingFromManyThreadsGivesTheSameResult) {
    const ChatTemplate chat_template = load_qwen3_template();
    const nlohmann::ordered_json cases =
        read_ordered_json(testing::testdata_path("qwen3-tokenizer/chat_template_golden.json"));
    std::vector<std::string> failures(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < failures.size(); ++t) {
        threads.emplace_back([&, t] {
            for (int repeat = 0; repeat < 5; ++repeat) {
                for (const auto& test_case : cases) {
                    auto rendered = chat_template.apply(test_case["messages"], options_from_kwargs(test_case["kwargs"]));
                    if (!rendered.ok() || rendered.value() != test_case["rendered"].get<std::string>())
                        failures[t] = test_case["name"].get<std::string>();
                }
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::string& failure : failures) EXPECT_EQ(failure, "");
}

TEST(ChatTemplate, AcceptsPlainJsonMessages) {
    // nlohmann::json (sorted keys) is fine when no object is printed with tojson.
    const ChatTemplate chat_template = load_qwen3_template();
    const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", "Hello!"}}});
    ChatTemplateOptions options;
    options.extra_kwargs = nlohmann::json{{"enable_thinking", false}};
    Result<std::string> rendered = chat_template.apply(messages, options);
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(), "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, ReadsNamedTemplateListAndRejectsBadConfigs) {
    const nlohmann::json config = {
        {"chat_template",
         nlohmann::json::array({{{"name", "tool_use"}, {"template", "T"}}, {{"name", "default"}, {"template", "D{{ bos_token }}"}}})}};
    Result<ChatTemplate> parsed = ChatTemplate::from_tokenizer_config(config, "cfg.json");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    Result<std::string> rendered = parsed->apply(nlohmann::json::array(), ChatTemplateOptions{}, "<s>");
    ASSERT_TRUE(rendered.ok());
    EXPECT_EQ(rendered.value(), "D<s>");

    const Result<ChatTemplate> missing = ChatTemplate::from_tokenizer_config(nlohmann::json::object(), "cfg.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("cfg.json"), std::string::npos);
    const Result<ChatTemplate> no_default = ChatTemplate::from_tokenizer_config(
        nlohmann::json{{"chat_template", nlohmann::json::array({{{"name", "x"}, {"template", "T"}}})}}, "cfg.json");
    EXPECT_FALSE(no_default.ok());
    const Result<ChatTemplate> not_string = ChatTemplate::from_tokenizer_config(nlohmann::json{{"chat_template", 3}}, "cfg.json");
    EXPECT_FALSE(not_string.ok());
    const Result<ChatTemplate> syntax = ChatTemplate::from_tokenizer_config(nlohmann::json{{"chat_template", "{% if %}"}}, "cfg.json");
    ASSERT_FALSE(syntax.ok());
    EXPECT_NE(syntax.error().message.find("line 1, column"), std::string::npos) << syntax.error().message;
}

TEST(ChatTemplate, RejectsNonListMessages) {
    const Result<ChatTemplate> parsed = ChatTemplate::parse("{{ messages }}");
    ASSERT_TRUE(parsed.ok());
    EXPECT_FALSE(parsed->apply(nlohmann::json::object(), ChatTemplateOptions{}).ok());
}

}  // namespace
}  // namespace lmrun
