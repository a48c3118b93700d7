// The HTTP front end in process (so the sanitizers see it): routes, JSON and
// SSE bodies, auth, errors, shutdown, and the hostile inputs of issue 10, each
// sent as it was reported. The Node tests drive the real binary.
#include "server/http_server.h"

#include <chrono>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "server_test_util.h"

namespace lmrun::server {
namespace {

class HttpServerTest : public ::testing::Test {
  protected:
    virtual HttpServerOptions options() const {
        HttpServerOptions options;
        options.port = 0;
        options.api_key = "key";
        options.http_threads = 8;
        return options;
    }

    void SetUp() override {
        std::unique_ptr<LLMEngine> llm_engine = testing::make_stories_engine();
        ModelInfo info{
            "stories", "unused", llm_engine->max_model_len(), llm_engine->model_config().vocab_size, 0, "",
            "",        false};
        prompts_ = std::make_unique<PromptProcessor>(llm_engine->tokenizer(), std::nullopt, info);
        metrics_ = std::make_unique<ServerMetrics>("stories");
        engine_ = std::make_unique<AsyncEngine>(std::move(llm_engine), AsyncEngineOptions{8, 8}, *metrics_);
        http_ = std::make_unique<HttpServer>(options(), *prompts_, *engine_, *metrics_);
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

    nlohmann::json post_json(const std::string& path, const std::string& body, int expected_status) {
        auto response = post(path, body);
        if (!response) {
            ADD_FAILURE() << path << ": no response";
            return nlohmann::json();
        }
        EXPECT_EQ(response->status, expected_status) << path << ": " << response->body.substr(0, 300);
        EXPECT_EQ(response->get_header_value("Content-Type"), "application/json");
        return nlohmann::json::parse(response->body, nullptr, false);
    }

    std::string metrics_text() {
        httplib::Client client("127.0.0.1", port_);
        auto response = client.Get("/metrics");
        return response ? response->body : std::string();
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
    nlohmann::json body = {
        {"model", "stories"}, {"prompt", golden.prompt_ids}, {"max_tokens", golden.output_ids.size()},
        {"temperature", 0},   {"ignore_eos", true},          {"return_token_ids", true}};
    auto response = post("/v1/completions", body.dump());
    ASSERT_TRUE(response);
    ASSERT_EQ(response->status, 200) << response->body;
    nlohmann::json json = nlohmann::json::parse(response->body);
    EXPECT_EQ(json["choices"][0]["text"], golden.output_text);
    EXPECT_EQ(json["choices"][0]["token_ids"].get<std::vector<int32_t>>(), golden.output_ids);
    EXPECT_EQ(json["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(json["usage"]["prompt_tokens"], golden.prompt_ids.size());
    EXPECT_EQ(json["usage"]["completion_tokens"], golden.output_ids.size());
}

TEST_F(HttpServerTest, StreamedTextEqualsTheGolden) {
    const testing::StoriesGolden golden = testing::stories_goldens()[3];  // prompt2
    nlohmann::json body = {{"prompt", golden.prompt_text},
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
    nlohmann::json usage;
    for (size_t begin = 0, end; (end = sse.find("\n\n", begin)) != std::string::npos; begin = end + 2) {
        std::string event = sse.substr(begin, end - begin);
        ASSERT_EQ(event.rfind("data: ", 0), 0u) << event;
        if (event == "data: [DONE]") continue;
        nlohmann::json chunk = nlohmann::json::parse(event.substr(6));
        if (chunk["usage"].is_object()) usage = chunk["usage"];
        for (const nlohmann::json& choice : chunk["choices"]) text += choice["text"].get<std::string>();
    }
    EXPECT_EQ(text, golden.output_text);
    EXPECT_EQ(usage["completion_tokens"], golden.output_ids.size());
}

TEST_F(HttpServerTest, ErrorsAndAuth) {
    auto unauthorized = post("/v1/completions", R"({"prompt": "a"})", false);
    ASSERT_TRUE(unauthorized);
    EXPECT_EQ(unauthorized->status, 401);
    EXPECT_EQ(nlohmann::json::parse(unauthorized->body)["error"]["code"], "invalid_api_key");
    auto malformed = post("/v1/completions", "{\"prompt\": ");
    ASSERT_TRUE(malformed);
    EXPECT_EQ(malformed->status, 400);
    auto bad_value = post("/v1/completions", R"({"prompt": "a", "top_p": 7})");
    ASSERT_TRUE(bad_value);
    EXPECT_EQ(bad_value->status, 400);
    EXPECT_EQ(nlohmann::json::parse(bad_value->body)["error"]["param"], "top_p");
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

// GET /load: what a router polls; open without the key, like /health.
TEST_F(HttpServerTest, LoadReportsTokensAndCapacityWithoutTheKey) {
    httplib::Client client("127.0.0.1", port_);
    auto idle = client.Get("/load");
    ASSERT_TRUE(idle);
    ASSERT_EQ(idle->status, 200);
    const nlohmann::json before = nlohmann::json::parse(idle->body);
    EXPECT_EQ(before["load_tokens"], 0);
    EXPECT_EQ(before["num_running"], 0);
    EXPECT_GT(before["kv_capacity_tokens"].get<int64_t>(), 0);
    // 300 prompt tokens: at least one full KV block, which the prefix cache looks up.
    post_json("/v1/completions",
              nlohmann::json{{"prompt", std::vector<int32_t>(300, 403)}, {"max_tokens", 4}}.dump(), 200);
    // The gauges are published after each engine step.
    nlohmann::json after;
    for (int i = 0; i < 100; ++i) {
        after = nlohmann::json::parse(client.Get("/load")->body);
        if (after["prefix_cache_queries"].get<int64_t>() > 0 && after["load_tokens"] == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GT(after["prefix_cache_queries"].get<int64_t>(), 0);
    EXPECT_EQ(after["load_tokens"], 0);  // finished: nothing queued or running
}

TEST_F(HttpServerTest, TokenizeDetokenize) {
    const testing::StoriesGolden golden = testing::stories_goldens()[4];
    auto tokenized = post("/tokenize", nlohmann::json{{"prompt", golden.prompt_text}}.dump());
    ASSERT_TRUE(tokenized);
    ASSERT_EQ(tokenized->status, 200);
    EXPECT_EQ(nlohmann::json::parse(tokenized->body)["tokens"].get<std::vector<int32_t>>(),
              golden.prompt_ids);
    auto detokenized =
        post("/detokenize", nlohmann::json{{"tokens", testing::stories_goldens()[0].output_ids}}.dump());
    ASSERT_TRUE(detokenized);
    ASSERT_EQ(detokenized->status, 200);
    EXPECT_EQ(nlohmann::json::parse(detokenized->body)["prompt"], testing::stories_goldens()[0].output_text);
}

TEST_F(HttpServerTest, ShutdownFinishesInFlightAndRefusesNew) {
    std::thread long_request([&] {
        auto response = post("/v1/completions", R"({"prompt": [1], "max_tokens": 300, "ignore_eos": true})");
        ASSERT_TRUE(response);
        EXPECT_EQ(response->status, 200);
        EXPECT_EQ(nlohmann::json::parse(response->body)["usage"]["completion_tokens"], 300);
    });
    while (engine_->num_admitted_sequences() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread stopper([&] { http_->shutdown(30); });
    while (engine_->accepting()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto refused = post("/v1/completions", R"({"prompt": [1], "max_tokens": 2})");
    if (refused) {
        EXPECT_EQ(refused->status, 503);  // or the socket is already closed
    }
    long_request.join();
    stopper.join();
    serve_thread_.join();
}

// Item 1: JSON nested 200,000 deep, through every endpoint that takes a body.
TEST_F(HttpServerTest, JsonNested200000DeepIsA400Everywhere) {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/tokenize", deep},
        {"/detokenize", R"({"tokens": )" + deep + "}"},
        {"/v1/chat/completions", R"({"messages": )" + deep + "}"},
        {"/v1/completions", R"({"prompt": )" + deep + "}"},
    };
    for (const auto& [path, body] : cases) {
        nlohmann::json error = post_json(path, body, 400)["error"];
        EXPECT_EQ(error["message"], "request body: JSON nested deeper than 256 levels") << path;
        EXPECT_EQ(error["type"], "invalid_request_error");
        EXPECT_TRUE(error["param"].is_null());
    }
    httplib::Client client("127.0.0.1", port_);
    auto health = client.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
}

// Item 2: the 64 MiB limit holds across chunks; compressed bodies are refused (415), not inflated.
TEST_F(HttpServerTest, BodyLimitHoldsAcrossChunksAndCompressedBodiesAre415) {
    const std::string body = "{\"prompt\": \"" + std::string((size_t(64) << 20), 'a') + "\"}";
    testing::RawConnection connection(port_);
    connection.send(
        "POST /tokenize HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer key\r\n"
        "Transfer-Encoding: chunked\r\n\r\n" +
        testing::chunked(body, 1 << 20));
    const std::string response = connection.read_response(60);
    ASSERT_EQ(testing::status_of(response), 413) << response.substr(0, 300);
    nlohmann::json error = nlohmann::json::parse(testing::body_of(response))["error"];
    EXPECT_EQ(error["message"],
              "The request body is larger than this server's limit of 67108864 bytes (64 MiB; lmrun serve "
              "--max-request-body-mb).");
    EXPECT_EQ(error["code"], "request_too_large");
    testing::RawConnection gzip(port_);
    const std::string gzip_magic("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
    gzip.send(
        "POST /v1/completions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer key\r\nContent-Encoding: gzip\r\n"
        "Content-Length: 10\r\n\r\n" +
        gzip_magic);
    const std::string refused = gzip.read_response(30);
    ASSERT_EQ(testing::status_of(refused), 415) << refused;
    EXPECT_EQ(nlohmann::json::parse(testing::body_of(refused))["error"]["code"],
              "unsupported_content_encoding");
}

// Item 3: an object with 80,000 keys is read like any other (parse_ordered_json is linear: see
// JsonIo.OrderedObjectKeysAreNotComparedWithEachOther).
TEST_F(HttpServerTest, ObjectWith80000KeysIsAnswered) {
    std::string extra;
    for (int i = 0; i < 80000; ++i) extra += fmt::format(", \"k{}\": {}", i, i);
    nlohmann::json completion =
        post_json("/v1/completions", R"({"prompt": [1], "max_tokens": 2)" + extra + "}", 200);
    EXPECT_EQ(completion["usage"]["completion_tokens"], 2);
    nlohmann::json tokenized = post_json("/tokenize", R"({"prompt": "Once upon a time")" + extra + "}", 200);
    EXPECT_EQ(tokenized["count"], 5);
}

// Items 4 and 5, the inputs as reported: each a 400 naming the field, none a 500.
TEST_F(HttpServerTest, ReportedIntegerAndTypeConfusionInputsAre400NamingTheField) {
    const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
        {"/v1/completions", R"({"prompt": "a", "max_tokens": 9223372036854775807})", "max_tokens"},
        {"/v1/completions", R"({"prompt": "a", "best_of": 18446744073709551615})", "best_of"},
        {"/v1/completions", R"({"prompt": "a", "n": -1})", "n"},
        {"/v1/completions", R"({"prompt": "a", "logprobs": 1099511627776})", "logprobs"},
        {"/v1/completions", R"({"prompt": "a", "top_k": 1099511627776})", "top_k"},
        {"/v1/completions", R"({"prompt": "a", "seed": 18446744073709551615})", "seed"},
        {"/tokenize", R"({"prompt": "a", "return_token_strs": "yes"})", "return_token_strs"},
        {"/v1/completions", R"({"prompt": "a", "response_format": {"type": 5}})", "response_format"},
        {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": [{"type": 5}]}]})",
         "messages[0].content"},
        {"/detokenize", R"({"tokens": [1, 18446744073709551615]})", "tokens"},
    };
    for (const auto& [path, body, param] : cases) {
        nlohmann::json error = post_json(path, body, 400)["error"];
        EXPECT_EQ(error["param"], param) << body << ": " << error.dump();
        EXPECT_EQ(error["type"], "invalid_request_error");
    }
    EXPECT_EQ(metrics_text().find("status=\"500\""), std::string::npos);
}

// Item 6: a non-streamed request whose client leaves is aborted, its KV blocks freed.
TEST_F(HttpServerTest, NonStreamedRequestIsAbortedWhenItsClientLeaves) {
    testing::RawConnection client(port_);
    const std::string body = R"({"prompt": [1], "max_tokens": 500, "n": 8, "ignore_eos": true})";
    client.send(
        fmt::format("POST /v1/completions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer key\r\n"
                    "Content-Length: {}\r\n\r\n{}",
                    body.size(), body));
    for (int i = 0; i < 10000 && metrics_->gauges().kv_cache_usage == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_GT(metrics_->gauges().kv_cache_usage, 0);  // running
    client.close();
    for (int i = 0; i < 10000 && engine_->num_admitted_sequences() > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(engine_->num_admitted_sequences(), 0);
    for (int i = 0; i < 1000 && metrics_->gauges().kv_cache_usage > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(metrics_->gauges().kv_cache_usage, 0);
    const std::string text = metrics_text();
    EXPECT_NE(text.find("vllm:request_success_total{model_name=\"stories\",finished_reason=\"abort\"} 8"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("vllm:request_success_total{model_name=\"stories\",finished_reason=\"length\"} 0"),
              std::string::npos);
}

// Item 8: slow clients do not hold a shutdown; in-flight requests are cut at the deadline.
TEST_F(HttpServerTest, ShutdownEndsAtItsDeadlineWithSlowClientsConnected) {
    std::vector<std::unique_ptr<testing::RawConnection>> slow;
    for (int i = 0; i < 20; ++i) {
        slow.push_back(std::make_unique<testing::RawConnection>(port_));
        slow.back()->send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Len");
    }
    testing::RawConnection in_flight(port_);
    const std::string body = R"({"prompt": [1], "max_tokens": 500, "n": 8, "ignore_eos": true})";
    in_flight.send(
        fmt::format("POST /v1/completions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer key\r\n"
                    "Content-Length: {}\r\n\r\n{}",
                    body.size(), body));
    while (engine_->num_admitted_sequences() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(http_->shutdown(0.2));  // the request could not finish: not drained
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(elapsed, 0.2 + 2.0);  // the deadline, with room for a loaded machine; not a speed test
    serve_thread_.join();
    const std::string response = in_flight.read_response(10);
    // Either the responder answered the aborted request, or (when the engine's last step outlived the
    // deadline on a loaded machine) the transport answered it as it stopped; both are a 503 saying why.
    // Or the connection was closed before the answer went out.
    if (!response.empty()) {
        EXPECT_EQ(testing::status_of(response), 503) << response;
        EXPECT_NE(response.find("the server is shutting down"), std::string::npos) << response;
    }
    for (auto& connection : slow) EXPECT_TRUE(connection->closed_by_server(10));
}

TEST_F(HttpServerTest, ShutdownDoesNotWaitForSlowClients) {
    std::vector<std::unique_ptr<testing::RawConnection>> slow;
    for (int i = 0; i < 20; ++i) {
        slow.push_back(std::make_unique<testing::RawConnection>(port_));
        slow.back()->send("POST /v1/completions HTTP/1.1\r\nHost: t\r\n");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(http_->shutdown(30));  // nothing in flight: drained
    serve_thread_.join();
    for (auto& connection : slow) EXPECT_TRUE(connection->closed_by_server(10));
}

// Item 9: bytes after a NUL inside a JSON string reach the tokenizer and come back.
TEST_F(HttpServerTest, BytesAfterANulAreKept) {
    const std::string text("hello\0world", 11);
    nlohmann::json tokenized =
        post_json("/tokenize", R"({"prompt": "hello\u0000world", "add_special_tokens": false})", 200);
    nlohmann::json detokenized =
        post_json("/detokenize", nlohmann::json{{"tokens", tokenized["tokens"]}}.dump(), 200);
    const std::string round_trip = detokenized["prompt"];
    ASSERT_GE(round_trip.size(), text.size());
    EXPECT_EQ(round_trip.substr(round_trip.size() - text.size()), text);
    nlohmann::json echoed =
        post_json("/v1/completions", R"({"prompt": "hello\u0000world", "echo": true, "max_tokens": 1})", 200);
    const std::string completion = echoed["choices"][0]["text"];
    EXPECT_EQ(completion.substr(0, text.size()), text);
}

// Item 9: /tokenize and /detokenize need the key when one is set.
TEST_F(HttpServerTest, TokenizeAndDetokenizeNeedTheKey) {
    for (const char* path : {"/tokenize", "/detokenize"}) {
        auto response = post(path, R"({"prompt": "a", "tokens": [1]})", false);
        ASSERT_TRUE(response);
        EXPECT_EQ(response->status, 401) << path;
        EXPECT_EQ(nlohmann::json::parse(response->body)["error"]["code"], "invalid_api_key");
    }
}

class OpenTokenizeTest : public HttpServerTest {
  protected:
    HttpServerOptions options() const override {
        HttpServerOptions options = HttpServerTest::options();
        options.allow_unauthenticated_tokenize = true;
        return options;
    }
};

TEST_F(OpenTokenizeTest, AllowUnauthenticatedTokenizeOpensOnlyThoseTwo) {
    auto tokenized = post("/tokenize", R"({"prompt": "a"})", false);
    ASSERT_TRUE(tokenized);
    EXPECT_EQ(tokenized->status, 200);
    auto detokenized = post("/detokenize", R"({"tokens": [1]})", false);
    ASSERT_TRUE(detokenized);
    EXPECT_EQ(detokenized->status, 200);
    auto completion = post("/v1/completions", R"({"prompt": "a"})", false);
    ASSERT_TRUE(completion);
    EXPECT_EQ(completion->status, 401);
}

class OneWorkerTest : public HttpServerTest {
  protected:
    HttpServerOptions options() const override {
        HttpServerOptions options = HttpServerTest::options();
        options.http_threads = 1;
        return options;
    }
};

// Item 7: /health and /metrics answer at once while every worker is busy.
TEST_F(OneWorkerTest, HealthAndMetricsAnswerWhileTheOnlyWorkerIsBusy) {
    std::string body = R"({"prompt": "a")";
    for (int i = 0; i < 80000; ++i) body += fmt::format(", \"k{}\": {}", i, i);
    body += "}";
    std::vector<std::unique_ptr<testing::RawConnection>> busy;
    for (int i = 0; i < 10; ++i) {
        busy.push_back(std::make_unique<testing::RawConnection>(port_));
        busy.back()->send(
            fmt::format("POST /tokenize HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer key\r\n"
                        "Content-Length: {}\r\n\r\n{}",
                        body.size(), body));
    }
    httplib::Client client("127.0.0.1", port_);
    auto health = client.Get("/health");
    auto metrics = client.Get("/metrics");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
    EXPECT_EQ(busy.back()->read_response(0.001), "");  // the worker has not got to the last one yet
    for (auto& connection : busy) EXPECT_EQ(testing::status_of(connection->read_response(60)), 200);
}

}  // namespace
}  // namespace lmrun::server
