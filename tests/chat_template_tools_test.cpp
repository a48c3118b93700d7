// Tool calling through the real Qwen3 chat template: conversations with tool
// definitions, assistant tool calls (arguments as a JSON string, as OpenAI clients
// send them) and tool results render byte for byte as jinja2 renders them
// (tests/structured/render_chat_template.py, set up as transformers does).
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/chat_template.h"

namespace lmrun::testing {
namespace {

const Json& qwen3_config() {
    static const Json config = [] {
        std::ifstream in(testdata_path("qwen3-tokenizer/tokenizer_config.json"));
        return Json::parse(in);
    }();
    return config;
}

std::string render_with_jinja2(const Json& messages, const Json& kwargs) {
    const std::string input = make_temp_dir("render_chat_template") + "/request.json";
    {
        std::ofstream out(input);
        out << Json{{"template", qwen3_config()["chat_template"]}, {"messages", messages}, {"kwargs", kwargs}}
                   .dump();
    }
    const std::string command =
        std::string("python3 ") + LMRUN_SOURCE_DIR + "/tests/structured/render_chat_template.py " + input;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    if (!pipe) throw std::runtime_error("cannot run " + command);
    std::string text;
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe.get())) > 0;) text.append(buffer, n);
    return text;
}

const char* const kWeatherTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "description": "Local time", "parameters": {"type": "object", "properties": {}}}}
])";

std::vector<std::pair<std::string, Json>> conversations() {
    return {
        {"tools_only", Json::parse(R"([{"role": "user", "content": "Weather in Paris?"}])")},
        {"system_and_tools",
         Json::parse(
             R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Time?"}])")},
        {"tool_round_trip", Json::parse(R"([
            {"role": "user", "content": "Weather in Paris and the time?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21, \"sky\": \"clear\"}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "14:05"}])")},
        {"tool_then_answer_then_user", Json::parse(R"([
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "Let me look.", "reasoning_content": "They want weather.", "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
            {"role": "tool", "tool_call_id": "call_9", "content": "cold"},
            {"role": "assistant", "content": "It is cold in Oslo."},
            {"role": "user", "content": "Thanks, and the time?"}])")},
    };
}

TEST(ChatTemplateTools, Qwen3ConversationsWithToolsMatchJinja2) {
    auto chat_template = ChatTemplate::from_tokenizer_config(qwen3_config(), "tokenizer_config.json");
    ASSERT_TRUE(chat_template.ok()) << chat_template.error().message;
    for (const auto& [name, messages] : conversations()) {
        for (bool thinking : {true, false}) {
            ChatTemplateOptions options;
            options.extra_kwargs["tools"] = Json::parse(kWeatherTools);
            if (!thinking) options.extra_kwargs["enable_thinking"] = false;
            auto rendered = chat_template->apply(messages, options);
            ASSERT_TRUE(rendered.ok()) << name << ": " << rendered.error().message;
            Json kwargs = options.extra_kwargs;
            kwargs["add_generation_prompt"] = true;
            const std::string expected = render_with_jinja2(messages, kwargs);
            ASSERT_FALSE(expected.empty()) << name;
            EXPECT_EQ(*rendered, expected) << name << (thinking ? "" : " (enable_thinking false)");
            EXPECT_NE(rendered->find("<tools>"), std::string::npos) << name;
        }
    }
}

}  // namespace
}  // namespace lmrun::testing
