#include "server/openai_request.h"

#include <limits>

#include <gtest/gtest.h>

#include "server/openai_response.h"

namespace lmrun::server {
namespace {

std::optional<ApiError> parse_completion(const std::string& text, CompletionRequest& request) {
    return parse_completion_request(Json::parse(text), request);
}

std::optional<ApiError> parse_chat(const std::string& text, ChatRequest& request) {
    return parse_chat_request(Json::parse(text), request);
}

TEST(OpenAIRequest, CompletionDefaults) {
    CompletionRequest request;
    ASSERT_FALSE(parse_completion(R"({"model": "m", "prompt": "Once upon"})", request));
    ASSERT_EQ(request.prompts.size(), 1u);
    EXPECT_EQ(request.prompts[0].text, "Once upon");
    EXPECT_FALSE(request.prompts[0].is_token_ids);
    EXPECT_EQ(request.model, "m");
    EXPECT_EQ(request.params.max_tokens, 16);  // OpenAI's completions default
    EXPECT_FALSE(request.max_tokens_given);
    EXPECT_FLOAT_EQ(request.params.temperature, 1.0f);
    EXPECT_EQ(request.params.n, 1);
    EXPECT_FALSE(request.params.logprobs.has_value());
    EXPECT_FALSE(request.params.seed.has_value());
    EXPECT_FALSE(request.stream);
    EXPECT_TRUE(request.add_special_tokens);
}

TEST(OpenAIRequest, CompletionMapsEverySamplingField) {
    CompletionRequest request;
    ASSERT_FALSE(parse_completion(R"({"prompt": [1, 2, 3], "max_tokens": 40, "temperature": 0.5, "top_p": 0.9,
        "top_k": 7, "min_p": 0.05, "repetition_penalty": 1.2, "presence_penalty": 0.5, "frequency_penalty": -0.5,
        "n": 3, "seed": 42, "stop": ["\n\n", "END"], "stop_token_ids": [1, 2], "ignore_eos": true,
        "min_tokens": 4, "skip_special_tokens": false, "logprobs": 2, "stream": true,
        "stream_options": {"include_usage": true}, "add_special_tokens": false, "user": "ignored"})",
                                  request));
    const SamplingParams& p = request.params;
    ASSERT_EQ(request.prompts.size(), 1u);
    EXPECT_TRUE(request.prompts[0].is_token_ids);
    EXPECT_EQ(request.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(p.max_tokens, 40);
    EXPECT_TRUE(request.max_tokens_given);
    EXPECT_FLOAT_EQ(p.temperature, 0.5f);
    EXPECT_FLOAT_EQ(p.top_p, 0.9f);
    EXPECT_EQ(p.top_k, 7);
    EXPECT_FLOAT_EQ(p.min_p, 0.05f);
    EXPECT_FLOAT_EQ(p.repetition_penalty, 1.2f);
    EXPECT_FLOAT_EQ(p.presence_penalty, 0.5f);
    EXPECT_FLOAT_EQ(p.frequency_penalty, -0.5f);
    EXPECT_EQ(p.n, 3);
    ASSERT_TRUE(p.seed.has_value());
    EXPECT_EQ(*p.seed, 42u);
    EXPECT_EQ(p.stop, (std::vector<std::string>{"\n\n", "END"}));
    EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{1, 2}));
    EXPECT_TRUE(p.ignore_eos);
    EXPECT_EQ(p.min_tokens, 4);
    EXPECT_FALSE(p.skip_special_tokens);
    ASSERT_TRUE(p.logprobs.has_value());
    EXPECT_EQ(*p.logprobs, 2);
    EXPECT_TRUE(request.stream);
    EXPECT_TRUE(request.include_usage);
    EXPECT_FALSE(request.add_special_tokens);
}

TEST(OpenAIRequest, PromptForms) {
    CompletionRequest texts;
    ASSERT_FALSE(parse_completion(R"({"prompt": ["a", "b"]})", texts));
    ASSERT_EQ(texts.prompts.size(), 2u);
    EXPECT_EQ(texts.prompts[1].text, "b");
    CompletionRequest id_lists;
    ASSERT_FALSE(parse_completion(R"({"prompt": [[1, 5], [7]], "stop": "x"})", id_lists));
    ASSERT_EQ(id_lists.prompts.size(), 2u);
    EXPECT_EQ(id_lists.prompts[0].token_ids, (std::vector<int32_t>{1, 5}));
    EXPECT_EQ(id_lists.prompts[1].token_ids, (std::vector<int32_t>{7}));
    EXPECT_EQ(id_lists.params.stop, (std::vector<std::string>{"x"}));
    for (const char* bad : {R"({"prompt": []})", R"({"prompt": ["a", 1]})", R"({"prompt": [[1], "a"]})",
                            R"({"prompt": [1, -2]})", R"({"prompt": [[]]})", R"({"prompt": 5})", R"({})",
                            R"({"prompt": null})", R"({"prompt": [1.5]})"}) {
        CompletionRequest request;
        auto error = parse_completion(bad, request);
        ASSERT_TRUE(error) << bad;
        EXPECT_EQ(error->status, 400) << bad;
        EXPECT_EQ(error->param, "prompt") << bad;
    }
}

struct BadField {
    const char* body;
    const char* param;
};

TEST(OpenAIRequest, WrongTypesNameTheField) {
    const BadField cases[] = {
        {R"({"prompt": "a", "temperature": "hot"})", "temperature"},
        {R"({"prompt": "a", "max_tokens": 1.5})", "max_tokens"},
        {R"({"prompt": "a", "max_tokens": "10"})", "max_tokens"},
        {R"({"prompt": "a", "n": "2"})", "n"},
        {R"({"prompt": "a", "stream": "yes"})", "stream"},
        {R"({"prompt": "a", "stop": 5})", "stop"},
        {R"({"prompt": "a", "stop": ["x", 1]})", "stop"},
        {R"({"prompt": "a", "stop_token_ids": ["a"]})", "stop_token_ids"},
        {R"({"prompt": "a", "seed": "x"})", "seed"},
        {R"({"prompt": "a", "top_k": 0.5})", "top_k"},
        {R"({"prompt": "a", "logprobs": true})", "logprobs"},
        {R"({"prompt": "a", "ignore_eos": 1})", "ignore_eos"},
        {R"({"prompt": "a", "model": 3})", "model"},
        {R"({"prompt": "a", "stream_options": true})", "stream_options"},
        {R"({"prompt": "a", "n": 1e12})", "n"},
        {R"({"prompt": "a", "logit_bias": {"5": 10}})", "logit_bias"},
    };
    for (const BadField& bad : cases) {
        CompletionRequest request;
        auto error = parse_completion(bad.body, request);
        ASSERT_TRUE(error) << bad.body;
        EXPECT_EQ(error->status, 400) << bad.body;
        EXPECT_EQ(error->type, "invalid_request_error");
        EXPECT_EQ(error->param, bad.param) << bad.body << ": " << error->message;
    }
}

TEST(OpenAIRequest, InvalidValuesNameTheField) {
    const BadField cases[] = {
        {R"({"prompt": "a", "temperature": -1})", "temperature"},
        {R"({"prompt": "a", "top_p": 0})", "top_p"},
        {R"({"prompt": "a", "top_p": 1.5})", "top_p"},
        {R"({"prompt": "a", "min_p": 2})", "min_p"},
        {R"({"prompt": "a", "top_k": -5})", "top_k"},
        {R"({"prompt": "a", "n": 0})", "n"},
        {R"({"prompt": "a", "max_tokens": 0})", "max_tokens"},
        {R"({"prompt": "a", "max_tokens": 4, "min_tokens": 5})", "min_tokens"},
        {R"({"prompt": "a", "logprobs": 21})", "logprobs"},
        {R"({"prompt": "a", "repetition_penalty": 0})", "repetition_penalty"},
        {R"({"prompt": "a", "presence_penalty": 3})", "presence_penalty"},
        {R"({"prompt": "a", "frequency_penalty": -3})", "frequency_penalty"},
        {R"({"prompt": "a", "stop": [""]})", "stop"},
    };
    for (const BadField& bad : cases) {
        CompletionRequest request;
        auto error = parse_completion(bad.body, request);
        ASSERT_TRUE(error) << bad.body;
        EXPECT_EQ(error->status, 400);
        EXPECT_EQ(error->param, bad.param) << bad.body << ": " << error->message;
    }
}

TEST(OpenAIRequest, NotAnObject) {
    CompletionRequest completion;
    EXPECT_TRUE(parse_completion_request(Json::array({1, 2}), completion));
    ChatRequest chat;
    EXPECT_TRUE(parse_chat_request(Json("text"), chat));
}

TEST(OpenAIRequest, ChatMessagesAndTemplateOptions) {
    ChatRequest request;
    ASSERT_FALSE(parse_chat(R"({"model": "m", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]}],
        "max_completion_tokens": 9, "max_tokens": 100, "add_generation_prompt": false,
        "chat_template_kwargs": {"enable_thinking": false}, "logprobs": true, "top_logprobs": 3})",
                            request));
    ASSERT_EQ(request.messages.size(), 2u);
    EXPECT_EQ(request.messages[1]["content"], "Hello\nthere");
    EXPECT_EQ(request.messages[0]["role"], "system");
    EXPECT_EQ(request.params.max_tokens, 9);  // max_completion_tokens wins over the deprecated max_tokens
    EXPECT_TRUE(request.max_tokens_given);
    EXPECT_FALSE(request.template_options.add_generation_prompt);
    EXPECT_EQ(request.template_options.extra_kwargs["enable_thinking"], false);
    EXPECT_TRUE(request.logprobs);
    ASSERT_TRUE(request.params.logprobs.has_value());
    EXPECT_EQ(*request.params.logprobs, 3);
    EXPECT_FALSE(request.add_special_tokens);
}

TEST(OpenAIRequest, ChatWithoutMaxTokensLeavesItToTheContext) {
    ChatRequest request;
    ASSERT_FALSE(parse_chat(R"({"messages": [{"role": "user", "content": "hi"}]})", request));
    EXPECT_FALSE(request.max_tokens_given);
    EXPECT_EQ(request.params.max_tokens, std::numeric_limits<int32_t>::max());
    EXPECT_TRUE(request.template_options.add_generation_prompt);
    EXPECT_FALSE(request.params.logprobs.has_value());
}

TEST(OpenAIRequest, ChatErrorsNameTheField) {
    const BadField cases[] = {
        {R"({})", "messages"},
        {R"({"messages": []})", "messages"},
        {R"({"messages": "hi"})", "messages"},
        {R"({"messages": [{"content": "hi"}]})", "messages[0].role"},
        {R"({"messages": [{"role": "user", "content": "a"}, 5]})", "messages[1]"},
        {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
        {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content"},
        {R"({"messages": [{"role": "user", "content": "a"}], "top_logprobs": 2})", "top_logprobs"},
        {R"({"messages": [{"role": "user", "content": "a"}], "logprobs": true, "top_logprobs": 30})",
         "top_logprobs"},
        {R"({"messages": [{"role": "user", "content": "a"}], "max_completion_tokens": 0})",
         "max_completion_tokens"},
        {R"({"messages": [{"role": "user", "content": "a"}], "chat_template_kwargs": []})",
         "chat_template_kwargs"},
        {R"({"messages": [{"role": "user", "content": "a"}], "temperature": 101})", "temperature"},
        {R"({"messages": [{"role": "user", "content": "a"}], "response_format": {"type": "xml"}})",
         "response_format"},
    };
    for (const BadField& bad : cases) {
        ChatRequest request;
        auto error = parse_chat(bad.body, request);
        ASSERT_TRUE(error) << bad.body;
        EXPECT_EQ(error->status, 400);
        EXPECT_EQ(error->param, bad.param) << bad.body << ": " << error->message;
    }
}

TEST(OpenAIRequest, NullMeansAbsent) {
    CompletionRequest request;
    ASSERT_FALSE(parse_completion(
        R"({"prompt": "a", "temperature": null, "stop": null, "seed": null, "n": null})", request));
    EXPECT_FLOAT_EQ(request.params.temperature, 1.0f);
    EXPECT_TRUE(request.params.stop.empty());
    EXPECT_FALSE(request.params.seed.has_value());
}

}  // namespace
}  // namespace lmrun::server

namespace lmrun::server {
namespace {

// Issue 10, item 4: integers are range-checked before any arithmetic, and the error names the field.
TEST(OpenAIRequest, HugeAndNegativeIntegersNameTheField) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"("max_tokens": 9223372036854775807)", "max_tokens"},
        {R"("max_tokens": -5)", "max_tokens"},
        {R"("best_of": 18446744073709551615)", "best_of"},
        {R"("best_of": -1)", "best_of"},
        {R"("n": -1)", "n"},
        {R"("n": 1e20)", "n"},
        {R"("n": 4294967297)", "n"},
        {R"("logprobs": 1099511627776)", "logprobs"},
        {R"("logprobs": -1)", "logprobs"},
        {R"("top_k": 1099511627776)", "top_k"},
        {R"("top_k": -2)", "top_k"},
        {R"("seed": 18446744073709551615)", "seed"},
        {R"("seed": 1e30)", "seed"},
        {R"("min_tokens": 9223372036854775807)", "min_tokens"},
        {R"("stop_token_ids": [4294967296])", "stop_token_ids"},
        {R"("stop_token_ids": [-1])", "stop_token_ids"},
        {R"("temperature": 1e300)", "temperature"},
    };
    for (const auto& [field, param] : cases) {
        CompletionRequest request;
        auto error = parse_completion(R"({"prompt": "a", )" + field + "}", request);
        ASSERT_TRUE(error) << field;
        EXPECT_EQ(error->status, 400) << field;
        EXPECT_EQ(error->param, param) << field << ": " << error->message;
    }
    CompletionRequest prompt_ids;
    auto error = parse_completion(R"({"prompt": [1, 18446744073709551615]})", prompt_ids);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->param, "prompt");
    ChatRequest chat;
    error = parse_chat(
        R"({"messages": [{"role": "user", "content": "a"}], "top_logprobs": 1e15, "logprobs": true})", chat);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->param, "top_logprobs");
    ChatRequest completion_tokens;
    error = parse_chat(
        R"({"messages": [{"role": "user", "content": "a"}], "max_completion_tokens": 9223372036854775807})",
        completion_tokens);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->param, "max_completion_tokens");
}

// Issue 10, item 5: a field of the wrong type is a 400 naming it, never an exception (a 500).
TEST(OpenAIRequest, TypeConfusionNamesTheField) {
    CompletionRequest request;
    auto format = parse_completion(R"({"prompt": "a", "response_format": {"type": 5}})", request);
    ASSERT_TRUE(format);
    EXPECT_EQ(format->status, 400);
    EXPECT_EQ(format->param, "response_format");
    ChatRequest chat;
    auto part = parse_chat(R"({"messages": [{"role": "user", "content": [{"type": 5}]}]})", chat);
    ASSERT_TRUE(part);
    EXPECT_EQ(part->status, 400);
    EXPECT_EQ(part->param, "messages[0].content");
    ChatRequest text_part;
    auto text = parse_chat(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})",
                           text_part);
    ASSERT_TRUE(text);
    EXPECT_EQ(text->param, "messages[0].content");
}

// Every field either endpoint reads, given every kind of JSON value: the parsers answer (accept or
// a 400 naming a field); no JSON library exception is thrown, not even one caught inside.
TEST(OpenAIRequest, EveryFieldWithEveryKindOfValueIsAnsweredWithoutThrowing) {
    const std::vector<std::string> fields = {"model",
                                             "prompt",
                                             "messages",
                                             "max_tokens",
                                             "max_completion_tokens",
                                             "temperature",
                                             "top_p",
                                             "min_p",
                                             "top_k",
                                             "repetition_penalty",
                                             "presence_penalty",
                                             "frequency_penalty",
                                             "n",
                                             "best_of",
                                             "min_tokens",
                                             "ignore_eos",
                                             "skip_special_tokens",
                                             "stop",
                                             "stop_token_ids",
                                             "seed",
                                             "return_token_ids",
                                             "logit_bias",
                                             "suffix",
                                             "include_stop_str_in_output",
                                             "response_format",
                                             "stream",
                                             "stream_options",
                                             "logprobs",
                                             "top_logprobs",
                                             "echo",
                                             "add_special_tokens",
                                             "add_generation_prompt",
                                             "continue_final_message",
                                             "chat_template_kwargs",
                                             "tools",
                                             "documents"};
    const std::vector<std::string> values = {"null",
                                             "true",
                                             "false",
                                             "0",
                                             "-1",
                                             "1",
                                             "2.5",
                                             "1e300",
                                             "-1e300",
                                             "9223372036854775807",
                                             "18446744073709551615",
                                             "-9223372036854775808",
                                             "\"\"",
                                             "\"text\"",
                                             "[]",
                                             "[1]",
                                             "[\"a\"]",
                                             "[[1]]",
                                             "[null]",
                                             "[{}]",
                                             "{}",
                                             "{\"type\": 5}",
                                             "{\"type\": \"text\"}",
                                             "{\"include_usage\": \"yes\"}",
                                             "[{\"type\": 5}]",
                                             "[{\"role\": 5}]",
                                             "[{\"role\": \"user\", \"content\": [{\"type\": 5}]}]"};
    int num_answers = 0;
    for (const std::string& field : fields) {
        for (const std::string& value : values) {
            for (const char* base :
                 {R"({"prompt": "a", "messages": [{"role": "user", "content": "a"}]})", "{}"}) {
                Json body = Json::parse(base);
                body[field] = Json::parse(value);
                CompletionRequest completion;
                ChatRequest chat;
                std::optional<ApiError> errors[2];
                ASSERT_NO_THROW(errors[0] = parse_completion_request(body, completion))
                    << field << "=" << value;
                ASSERT_NO_THROW(errors[1] = parse_chat_request(body, chat)) << field << "=" << value;
                for (const auto& error : errors) {
                    if (!error) continue;
                    EXPECT_EQ(error->status, 400) << field << "=" << value;
                    EXPECT_EQ(error->type, "invalid_request_error");
                    // Answered by the field readers themselves, not by the safety net around them.
                    EXPECT_EQ(error->message.find("expected shape"), std::string::npos) << error->message;
                }
                ++num_answers;
            }
        }
    }
    EXPECT_EQ(num_answers, int(fields.size() * values.size() * 2));
}

}  // namespace
}  // namespace lmrun::server
