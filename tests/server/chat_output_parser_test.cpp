// Reading a chat answer as reasoning, content and tool calls: every case gives
// the same message whether the text arrives whole or split at every possible
// byte boundary (streaming), and the streamed deltas add up to the message.
#include "server/chat_output_parser.h"

#include <random>

#include <gtest/gtest.h>

#include "server/openai_response.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace lmrun::server {
namespace {

struct Accumulated {
    std::string reasoning, content;
    std::vector<ToolCall> calls;
};

void add(Accumulated& total, const ChatDelta& delta) {
    total.reasoning += delta.reasoning;
    total.content += delta.content;
    for (const ToolCallDelta& call : delta.tool_calls) {
        if (call.index >= int32_t(total.calls.size())) {
            ASSERT_EQ(call.index, int32_t(total.calls.size())) << "calls start in order";
            ASSERT_FALSE(call.id.empty()) << "a call's first delta carries its id";
            ASSERT_FALSE(call.name.empty());
            total.calls.push_back({call.id, call.name, ""});
        } else {
            EXPECT_TRUE(call.id.empty()) << "only the first delta of a call carries its id";
        }
        total.calls[size_t(call.index)].arguments += call.arguments;
    }
}

// Splits `text` at the given cut points and runs it through a parser.
Accumulated run_parser(const ChatOutputOptions& options, const std::string& text,
                       const std::vector<size_t>& cuts, Json* message = nullptr) {
    ChatOutputParser parser(options);
    Accumulated total;
    size_t begin = 0;
    for (size_t cut : cuts) {
        add(total, parser.push(std::string_view(text).substr(begin, cut - begin)));
        begin = cut;
    }
    add(total, parser.push(std::string_view(text).substr(begin)));
    add(total, parser.finish());
    if (message) *message = parser.message_json();
    return total;
}

// Whole, byte by byte, and at random cuts: the same message each time.
void expect_message(const ChatOutputOptions& options, const std::string& text, const Json& expected) {
    Json whole;
    const Accumulated reference = run_parser(options, text, {}, &whole);
    Json comparable = whole;
    if (comparable.contains("tool_calls")) {
        for (Json& call : comparable["tool_calls"]) call.erase("id");
    }
    EXPECT_EQ(comparable, expected) << text;
    std::vector<size_t> every_byte;
    for (size_t i = 1; i < text.size(); ++i) every_byte.push_back(i);
    std::mt19937 rng(1);
    std::vector<std::vector<size_t>> splits = {every_byte};
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<size_t> cuts;
        for (size_t i = 1; i < text.size(); ++i) {
            if (rng() % 4 == 0) cuts.push_back(i);
        }
        splits.push_back(cuts);
    }
    for (const auto& cuts : splits) {
        const Accumulated streamed = run_parser(options, text, cuts);
        EXPECT_EQ(streamed.reasoning, reference.reasoning) << text;
        EXPECT_EQ(streamed.content, reference.content) << text;
        ASSERT_EQ(streamed.calls.size(), reference.calls.size()) << text;
        for (size_t i = 0; i < streamed.calls.size(); ++i) {
            EXPECT_EQ(streamed.calls[i].name, reference.calls[i].name);
            EXPECT_EQ(streamed.calls[i].arguments, reference.calls[i].arguments);
        }
    }
}

Json call(const char* name, const char* arguments) {
    return Json{{"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

TEST(ChatOutputParser, Qwen3ReasoningSplit) {
    ChatOutputOptions options;
    options.reasoning = true;
    options.thinking = true;
    expect_message(options, "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
                   Json{{"role", "assistant"},
                        {"content", "The answer is 4."},
                        {"reasoning_content", "\nLet me think.\n"}});
    // The prompt opened the thinking: no <think> in the output.
    expect_message(options, "pondering</think>done",
                   Json{{"role", "assistant"}, {"content", "done"}, {"reasoning_content", "pondering"}});
    // Cut off while thinking: all reasoning.
    expect_message(options, "<think>still </thi",
                   Json{{"role", "assistant"}, {"content", ""}, {"reasoning_content", "still </thi"}});
    options.thinking = false;  // enable_thinking false: the prompt closed it
    expect_message(
        options, "plain <think> text",
        Json{{"role", "assistant"}, {"content", "plain <think> text"}, {"reasoning_content", nullptr}});
}

TEST(ChatOutputParser, HermesToolCallsAmongContent) {
    ChatOutputOptions options;
    options.tool_choice = ToolChoice::Auto;
    options.tool_call_format = ToolCallFormat::Hermes;
    expect_message(options,
                   "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                   "\"Paris\"}}\n</tool_call>\n"
                   "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
                   Json{{"role", "assistant"},
                        {"content", "Let me check."},
                        {"tool_calls", Json::array({call("get_weather", "{\"city\": \"Paris\"}"),
                                                    call("get_time", "{}")})}});
    // Only a call: content is null.
    expect_message(options, "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": [1, 2]}}</tool_call>",
                   Json{{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls", Json::array({call("f", "{\"x\": [1, 2]}")})}});
    // Tolerant: a malformed block stays content; "<tool" that never becomes a tag is content.
    expect_message(options, "a <tool_call>{not json}</tool_call> b <tool",
                   Json{{"role", "assistant"}, {"content", "a <tool_call>{not json}</tool_call> b <tool"}});
    // An unclosed block at the end still parses when it is complete JSON.
    expect_message(
        options, "<tool_call>{\"name\": \"f\", \"arguments\": {}}",
        Json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call("f", "{}")})}});
}

TEST(ChatOutputParser, Llama3JsonToolCalls) {
    ChatOutputOptions options;
    options.tool_choice = ToolChoice::Auto;
    options.tool_call_format = ToolCallFormat::Llama3Json;
    expect_message(options,
                   "{\"name\": \"f\", \"parameters\": {\"a\": 1}}; {\"name\": \"g\", \"parameters\": {}}",
                   Json{{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls", Json::array({call("f", "{\"a\": 1}"), call("g", "{}")})}});
    expect_message(options, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"s\": \"x;y\"}}",
                   Json{{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls", Json::array({call("f", "{\"s\": \"x;y\"}")})}});
    // Separators, brackets and escaped quotes inside strings are not the list's structure.
    expect_message(
        options,
        "{\"name\": \"f\", \"arguments\": {\"s\": \"a\\\"};[{b\\\\\"}}; {\"name\": \"g\", \"parameters\": "
        "{}}",
        Json{{"role", "assistant"},
             {"content", nullptr},
             {"tool_calls", Json::array({call("f", "{\"s\": \"a\\\"};[{b\\\\\"}"), call("g", "{}")})}});
    expect_message(options, "Just text {not a call}",
                   Json{{"role", "assistant"}, {"content", "Just text {not a call}"}});
    expect_message(options, "{broken", Json{{"role", "assistant"}, {"content", "{broken"}});
}

TEST(ChatOutputParser, NamedAndRequiredToolChoices) {
    ChatOutputOptions named;
    named.tool_choice = ToolChoice::Named;
    named.function_name = "get_weather";
    expect_message(
        named, "{\"city\": \"Oslo\", \"days\": 3}",
        Json{{"role", "assistant"},
             {"content", nullptr},
             {"tool_calls", Json::array({call("get_weather", "{\"city\": \"Oslo\", \"days\": 3}")})}});
    ChatOutputOptions required;
    required.tool_choice = ToolChoice::Required;
    expect_message(
        required,
        "[{\"name\": \"a\", \"parameters\": {\"q\": \"x, y}\"}}, {\"name\": \"b\\\"c\", \"parameters\": {}}]",
        Json{{"role", "assistant"},
             {"content", nullptr},
             {"tool_calls", Json::array({call("a", "{\"q\": \"x, y}\"}"), call("b\"c", "{}")})}});
    // A string ending in an escaped backslash closes at its quote; brackets inside strings are text.
    expect_message(required, "[{\"name\": \"a\\\\\", \"parameters\": {\"q\": \"\\\\\", \"r\": \"]}{\"}}]",
                   Json{{"role", "assistant"},
                        {"content", nullptr},
                        {"tool_calls", Json::array({call("a\\", "{\"q\": \"\\\\\", \"r\": \"]}{\"}")})}});
}

TEST(ChatOutputParser, ReasoningThenToolCalls) {
    ChatOutputOptions options;
    options.reasoning = true;
    options.thinking = true;
    options.tool_choice = ToolChoice::Auto;
    expect_message(
        options, "<think>need weather</think>\n\n<tool_call>{\"name\": \"w\", \"arguments\": {}}</tool_call>",
        Json{{"role", "assistant"},
             {"content", nullptr},
             {"reasoning_content", "need weather"},
             {"tool_calls", Json::array({call("w", "{}")})}});
}

TEST(ChatOutputParser, FinishReasonIsToolCallsOnlyWhenCallsWereMade) {
    ChatOutputOptions options;
    options.tool_choice = ToolChoice::Auto;
    ChatOutputParser with_call(options);
    with_call.push("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>");
    with_call.finish();
    EXPECT_EQ(with_call.finish_reason(FinishReason::Stop), Json("tool_calls"));
    EXPECT_EQ(with_call.finish_reason(FinishReason::Length), Json("length"));
    ChatOutputParser without(options);
    without.push("hello");
    without.finish();
    EXPECT_EQ(without.finish_reason(FinishReason::Stop), Json("stop"));
}

TEST(ReasoningParser, Qwen3PromptOpensReasoningUnlessTheTurnClosedIt) {
    auto tokenizer =
        Tokenizer::from_file(std::string(LMRUN_TESTDATA_DIR) + "/qwen3-tokenizer/tokenizer.json");
    ASSERT_TRUE(tokenizer.ok());
    auto ids = [&](const char* text) { return (*tokenizer)->encode(text, false); };
    EXPECT_TRUE(qwen3_prompt_opens_reasoning(**tokenizer,
                                             ids("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")));
    EXPECT_FALSE(qwen3_prompt_opens_reasoning(
        **tokenizer, ids("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")));
    // An earlier turn's thinking does not count.
    EXPECT_TRUE(qwen3_prompt_opens_reasoning(
        **tokenizer, ids("<|im_start|>assistant\n<think>a</think>b<|im_end|>\n<|im_start|>user\nc<|im_end|>\n"
                         "<|im_start|>assistant\n")));
    EXPECT_EQ(qwen3_reasoning_end_token(**tokenizer), std::optional<int32_t>(151668));
}

}  // namespace
}  // namespace lmrun::server
