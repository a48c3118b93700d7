#include "server/openai_response.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace lmrun::server {
namespace {

// A fake vocabulary: token i is "t<i>", except 7 -> "é" (two UTF-8 bytes).
std::string fake_token_text(int32_t id) {
    return id == 7 ? std::string("\xc3\xa9") : fmt::format("t{}", id);
}

TokenLogprob entry(int32_t id, float logprob, std::vector<std::pair<int32_t, float>> top) {
    TokenLogprob result;
    result.token_id = id;
    result.logprob = logprob;
    result.top = std::move(top);
    return result;
}

TEST(OpenAIResponse, CompletionLogprobs) {
    std::vector<TokenLogprob> logprobs = {entry(3, -0.5f, {{3, -0.5f}, {4, -1.5f}}),
                                          entry(12, -2.0f, {{5, -0.25f}})};
    Json json = completion_logprobs(logprobs, fake_token_text, 10);
    EXPECT_EQ(json["tokens"], Json({"t3", "t12"}));
    EXPECT_EQ(json["token_logprobs"], Json({-0.5, -2.0}));
    EXPECT_EQ(json["text_offset"], Json({10, 12}));  // "t3" is 2 bytes
    ASSERT_EQ(json["top_logprobs"].size(), 2u);
    EXPECT_EQ(json["top_logprobs"][0], Json({{"t3", -0.5}, {"t4", -1.5}}));
    EXPECT_EQ(json["top_logprobs"][1], Json({{"t5", -0.25}}));
}

TEST(OpenAIResponse, ChatLogprobsCarryBytes) {
    std::vector<TokenLogprob> logprobs = {entry(7, -0.125f, {{7, -0.125f}, {1, -3.0f}})};
    Json json = chat_logprobs(logprobs, fake_token_text);
    ASSERT_EQ(json["content"].size(), 1u);
    const Json& item = json["content"][0];
    EXPECT_EQ(item["token"], "\xc3\xa9");
    EXPECT_EQ(item["logprob"], -0.125);
    EXPECT_EQ(item["bytes"], Json({0xc3, 0xa9}));
    ASSERT_EQ(item["top_logprobs"].size(), 2u);
    EXPECT_EQ(item["top_logprobs"][1]["token"], "t1");
    EXPECT_EQ(item["top_logprobs"][1]["logprob"], -3.0);
    EXPECT_EQ(item["top_logprobs"][1]["bytes"], Json({'t', '1'}));
}

TEST(OpenAIResponse, CompletionResponseShape) {
    ResponseHeader header{"cmpl-1", "stories", 1700000000};
    Json choices = Json::array({completion_choice(0, "hello", nullptr, FinishReason::Length, nullptr),
                                completion_choice(1, "bye", nullptr, FinishReason::Stop, "END")});
    Json json = completion_response(header, choices, Usage{5, 7, 2});
    EXPECT_EQ(json["id"], "cmpl-1");
    EXPECT_EQ(json["object"], "text_completion");
    EXPECT_EQ(json["created"], 1700000000);
    EXPECT_EQ(json["model"], "stories");
    EXPECT_EQ(json["choices"][0]["text"], "hello");
    EXPECT_EQ(json["choices"][0]["finish_reason"], "length");
    EXPECT_TRUE(json["choices"][0]["logprobs"].is_null());
    EXPECT_EQ(json["choices"][1]["index"], 1);
    EXPECT_EQ(json["choices"][1]["finish_reason"], "stop");
    EXPECT_EQ(json["choices"][1]["stop_reason"], "END");
    EXPECT_EQ(json["usage"]["prompt_tokens"], 5);
    EXPECT_EQ(json["usage"]["completion_tokens"], 7);
    EXPECT_EQ(json["usage"]["total_tokens"], 12);
    EXPECT_EQ(json["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
}

TEST(OpenAIResponse, ChatResponseShape) {
    ResponseHeader header{"chatcmpl-9", "m", 1};
    Json json = chat_response(
        header, Json::array({chat_choice(0, "Hi!", nullptr, FinishReason::Stop, nullptr)}), Usage{3, 2, 0});
    EXPECT_EQ(json["object"], "chat.completion");
    EXPECT_EQ(json["choices"][0]["message"], Json({{"role", "assistant"}, {"content", "Hi!"}}));
    EXPECT_EQ(json["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(json["usage"]["total_tokens"], 5);
}

TEST(OpenAIResponse, Chunks) {
    ResponseHeader header{"cmpl-2", "m", 1};
    Json open = completion_chunk(header, 3, "abc", nullptr, FinishReason::None, true);
    EXPECT_EQ(open["object"], "text_completion");
    ASSERT_EQ(open["choices"].size(), 1u);
    EXPECT_EQ(open["choices"][0]["index"], 3);
    EXPECT_EQ(open["choices"][0]["text"], "abc");
    EXPECT_TRUE(open["choices"][0]["finish_reason"].is_null());
    ASSERT_TRUE(open.contains("usage"));
    EXPECT_TRUE(open["usage"].is_null());
    Json last = completion_chunk(header, 0, "", nullptr, FinishReason::Length, false);
    EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
    EXPECT_FALSE(last.contains("usage"));

    Json chat = chat_chunk(header, 0, Json{{"content", "x"}}, nullptr, FinishReason::Stop, false);
    EXPECT_EQ(chat["object"], "chat.completion.chunk");
    EXPECT_EQ(chat["choices"][0]["delta"]["content"], "x");
    EXPECT_EQ(chat["choices"][0]["finish_reason"], "stop");

    Json usage = usage_chunk(header, "chat.completion.chunk", Usage{4, 6, 0});
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["total_tokens"], 10);
}

TEST(OpenAIResponse, SseFraming) {
    EXPECT_EQ(sse_event(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
    EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

TEST(OpenAIResponse, InvalidUtf8IsReplacedNotThrown) {
    std::string half_character = "ab\xc3";  // a token that ends inside a UTF-8 sequence
    std::string dumped;
    ASSERT_NO_THROW(dumped = dump_json(Json{{"text", half_character}}));
    EXPECT_EQ(dumped, "{\"text\":\"ab\xef\xbf\xbd\"}");
}

TEST(OpenAIResponse, FinishReasonNames) {
    EXPECT_TRUE(finish_reason_json(FinishReason::None).is_null());
    EXPECT_EQ(finish_reason_json(FinishReason::Stop), "stop");
    EXPECT_EQ(finish_reason_json(FinishReason::Length), "length");
    EXPECT_EQ(finish_reason_json(FinishReason::Abort), "abort");
}

// vLLM's stop_reason: a number for a stop token id, the string for a stop string, null otherwise
// (EOS and length limits included).
TEST(OpenAIResponse, StopReasonIsATokenIdAStringOrNull) {
    EXPECT_EQ(stop_reason_json(StopReason(int32_t(7))), Json(7));
    EXPECT_TRUE(stop_reason_json(StopReason(int32_t(7))).is_number_integer());
    EXPECT_EQ(stop_reason_json(StopReason(std::string("END"))), Json("END"));
    EXPECT_TRUE(stop_reason_json(StopReason(std::string("7"))).is_string());
    EXPECT_TRUE(stop_reason_json(StopReason()).is_null());
}

}  // namespace
}  // namespace lmrun::server
