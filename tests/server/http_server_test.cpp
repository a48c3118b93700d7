// The HTTP front end in process (so the sanitizers see it): routes, JSON and
// SSE bodies, auth, errors, shutdown. The Node tests drive the real binary.
#include "server/http_server.h"

#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "server_test_util.h"

namespace lmrun::server {
namespace {

using Json = nlohmann::json;

class HttpServerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::unique_ptr<LLMEngine> llm_engine = testing::make_stories_engine();
        ModelInfo info{"stories", "unused", llm_engine->max_model_len(),
                       llm_engine->model_config().vocab_size, 0};
        prompts_ = std::make_unique<PromptProcessor>(llm_engine->tokenizer(), std::nullopt, info);
        metrics_ = std::make_unique<ServerMetrics>("stories");
        engine_ = std::make_unique<AsyncEngine>(std::move(llm_engine), AsyncEngineOptions{8, 8}, *metrics_);
        HttpServerOptions options;
        options.port = 0;
        options.api_key = "key";
        options.http_threads = 8;
        http_ = std::make_unique<HttpServer>(options, *prompts_, *engine_, *metrics_);
        auto port = http_->bind();
        ASSERT_TRUE(port.ok());
        port_ = port.value();
        engine_->start();
        serve_thread_ = std::thread([this] { EXPECT_TRUE(http_->serve().ok()); });
    }

    void TearDown() override {
        if (serve_thread_.joinable()) {
            http_->shutdown(5);
            serve_thread_.join();
        }
        engine_->stop();
    }

    httplib::Result post(const std::string& path, const std::string& body, bool with_key = true) {
        httplib::Client client("127.0.0.1", port_);
        httplib::Headers headers;
        if (with_key) headers.emplace("Authorization", "Bearer key");
        return client.Post(path.c_str(), headers, body, "application/json");
    }

    std::unique_ptr<PromptProcessor> prompts_;
    std::unique_ptr<ServerMetrics> metrics_;
    std::unique_ptr<AsyncEngine> engine_;
    std::unique_ptr<HttpServer> http_;
    std::thread serve_thread_;
    int port_ = 0;
};

TEST_F(HttpServerTest, GreedyCompletionEqualsTheGolden) {
    const testing::StoriesGolden golden = testing::stories_goldens()[2];  // prompt1
    Json body = {
        {"model", "stories"}, {"prompt", golden.prompt_ids}, {"max_tokens", golden.output_ids.size()},
        {"temperature", 0},   {"ignore_eos", true},          {"return_token_ids", true}};
    auto response = post("/v1/completions", body.dump());
    ASSERT_TRUE(response);
    ASSERT_EQ(response->status, 200) << response->body;
    Json json = Json::parse(response->body);
    EXPECT_EQ(json["choices"][0]["text"], golden.output_text);
    EXPECT_EQ(json["choices"][0]["token_ids"].get<std::vector<int32_t>>(), golden.output_ids);
    EXPECT_EQ(json["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(json["usage"]["prompt_tokens"], golden.prompt_ids.size());
    EXPECT_EQ(json["usage"]["completion_tokens"], golden.output_ids.size());
}

TEST_F(HttpServerTest, StreamedTextEqualsTheGolden) {
    const testing::StoriesGolden golden = testing::stories_goldens()[3];  // prompt2
    Json body = {{"prompt", golden.prompt_text},
                 {"max_tokens", golden.output_ids.size()},
                 {"temperature", 0},
                 {"ignore_eos", true},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}};
    auto response = post("/v1/completions", body.dump());
    ASSERT_TRUE(response);
    ASSERT_EQ(response->status, 200);
    EXPECT_EQ(response->get_header_value("Content-Type"), "text/event-stream");
    const std::string& sse = response->body;
    ASSERT_GE(sse.size(), 14u);
    EXPECT_EQ(sse.substr(sse.size() - 14), "data: [DONE]\n\n");
    std::string text;
    Json usage;
    for (size_t begin = 0, end; (end = sse.find("\n\n", begin)) != std::string::npos; begin = end + 2) {
        std::string event = sse.substr(begin, end - begin);
        ASSERT_EQ(event.rfind("data: ", 0), 0u) << event;
        if (event == "data: [DONE]") continue;
        Json chunk = Json::parse(event.substr(6));
        if (chunk["usage"].is_object()) usage = chunk["usage"];
        for (const Json& choice : chunk["choices"]) text += choice["text"].get<std::string>();
    }
    EXPECT_EQ(text, golden.output_text);
    EXPECT_EQ(usage["completion_tokens"], golden.output_ids.size());
}

TEST_F(HttpServerTest, ErrorsAndAuth) {
    auto unauthorized = post("/v1/completions", R"({"prompt": "a"})", false);
    ASSERT_TRUE(unauthorized);
    EXPECT_EQ(unauthorized->status, 401);
    EXPECT_EQ(Json::parse(unauthorized->body)["error"]["code"], "invalid_api_key");
    auto malformed = post("/v1/completions", "{\"prompt\": ");
    ASSERT_TRUE(malformed);
    EXPECT_EQ(malformed->status, 400);
    auto bad_value = post("/v1/completions", R"({"prompt": "a", "top_p": 7})");
    ASSERT_TRUE(bad_value);
    EXPECT_EQ(bad_value->status, 400);
    EXPECT_EQ(Json::parse(bad_value->body)["error"]["param"], "top_p");
    auto unknown_model = post("/v1/completions", R"({"prompt": "a", "model": "gpt"})");
    ASSERT_TRUE(unknown_model);
    EXPECT_EQ(unknown_model->status, 404);
    auto no_template = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})");
    ASSERT_TRUE(no_template);
    EXPECT_EQ(no_template->status, 400);
    httplib::Client client("127.0.0.1", port_);
    auto health = client.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto metrics = client.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("lmrun:http_responses_total{model_name=\"stories\",status=\"401\"} 1"),
              std::string::npos)
        << metrics->body;
}

TEST_F(HttpServerTest, TokenizeDetokenize) {
    const testing::StoriesGolden golden = testing::stories_goldens()[4];
    auto tokenized = post("/tokenize", Json{{"prompt", golden.prompt_text}}.dump());
    ASSERT_TRUE(tokenized);
    ASSERT_EQ(tokenized->status, 200);
    EXPECT_EQ(Json::parse(tokenized->body)["tokens"].get<std::vector<int32_t>>(), golden.prompt_ids);
    auto detokenized = post("/detokenize", Json{{"tokens", testing::stories_goldens()[0].output_ids}}.dump());
    ASSERT_TRUE(detokenized);
    ASSERT_EQ(detokenized->status, 200);
    EXPECT_EQ(Json::parse(detokenized->body)["prompt"], testing::stories_goldens()[0].output_text);
}

TEST_F(HttpServerTest, ShutdownFinishesInFlightAndRefusesNew) {
    std::thread long_request([&] {
        auto response = post("/v1/completions", R"({"prompt": [1], "max_tokens": 300, "ignore_eos": true})");
        ASSERT_TRUE(response);
        EXPECT_EQ(response->status, 200);
        EXPECT_EQ(Json::parse(response->body)["usage"]["completion_tokens"], 300);
    });
    while (engine_->num_admitted_sequences() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread stopper([&] { http_->shutdown(30); });
    while (engine_->accepting()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto refused = post("/v1/completions", R"({"prompt": [1], "max_tokens": 2})");
    if (refused) EXPECT_EQ(refused->status, 503);  // or the socket is already closed
    long_request.join();
    stopper.join();
    serve_thread_.join();
}

}  // namespace
}  // namespace lmrun::server
