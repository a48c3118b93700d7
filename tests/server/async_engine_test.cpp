#include "server/async_engine.h"

#include <thread>

#include <gtest/gtest.h>

#include "core/timer.h"
#include "server_test_util.h"

namespace lmrun::server {
namespace {

using testing::golden_params;
using testing::make_stories_engine;
using testing::stories_goldens;

std::vector<EngineRequest> one_request(std::vector<int32_t> prompt_ids, SamplingParams params) {
    return {EngineRequest{std::move(prompt_ids), params}};
}

SamplingParams long_params() {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 480;
    params.ignore_eos = true;
    return params;
}

// The next event, polling for up to `seconds`.
std::optional<StreamEvent> pop_within(RequestStream& stream, double seconds) {
    const double deadline = now_seconds() + seconds;
    for (;;) {
        if (auto event = stream.try_pop()) return event;
        if (now_seconds() > deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// Events until the stream's every prompt finished: (token ids by choice, final outputs).
struct Drained {
    std::vector<std::vector<int32_t>> delta_ids;
    std::vector<RequestOutput> outputs;
    std::vector<FinishReason> delta_finish;
};

Drained drain(RequestStream& stream, int32_t num_choices) {
    Drained drained;
    drained.delta_ids.resize(size_t(num_choices));
    drained.delta_finish.assign(size_t(num_choices), FinishReason::None);
    drained.outputs.resize(stream.engine_request_ids().size());
    const double deadline = now_seconds() + 60;
    while (!stream.all_finished() && now_seconds() < deadline) {
        auto event = pop_within(stream, 0.1);
        if (!event) continue;
        if (event->kind == StreamEvent::Kind::Finished) {
            drained.outputs[size_t(event->prompt_index)] = std::move(event->output);
            continue;
        }
        auto& ids = drained.delta_ids[size_t(event->delta.index)];
        ids.insert(ids.end(), event->delta.token_ids.begin(), event->delta.token_ids.end());
        if (event->delta.finished)
            drained.delta_finish[size_t(event->delta.index)] = event->delta.finish_reason;
    }
    return drained;
}

bool wait_for_usage_zero(const ServerMetrics& metrics) {
    for (int i = 0; i < 500; ++i) {
        EngineGauges gauges = metrics.gauges();
        if (gauges.kv_cache_usage == 0 && gauges.num_running == 0 && gauges.num_waiting == 0) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

TEST(AsyncEngine, ConcurrentStreamsEqualTheGoldens) {
    ServerMetrics metrics("stories");
    AsyncEngine engine(make_stories_engine(), AsyncEngineOptions{8, 8}, metrics);
    engine.start();
    std::vector<testing::StoriesGolden> goldens = stories_goldens();
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (size_t i = 0; i < goldens.size(); ++i) {
        auto stream =
            std::make_shared<RequestStream>(std::vector<std::string>{"golden-" + std::to_string(i)}, 1, true);
        ASSERT_EQ(engine.submit(stream, one_request(goldens[i].prompt_ids, golden_params(goldens[i]))),
                  AdmitResult::Accepted);
        streams.push_back(stream);
    }
    for (size_t i = 0; i < goldens.size(); ++i) {
        Drained drained = drain(*streams[i], 1);
        ASSERT_TRUE(streams[i]->all_finished()) << goldens[i].name;
        std::vector<int32_t> expected = goldens[i].output_ids;
        if (goldens[i].stopped_on_bos) expected.push_back(1);
        EXPECT_EQ(drained.delta_ids[0], expected) << goldens[i].name;
        ASSERT_EQ(drained.outputs[0].outputs.size(), 1u);
        EXPECT_EQ(drained.outputs[0].outputs[0].token_ids, expected) << goldens[i].name;
        EXPECT_EQ(drained.outputs[0].outputs[0].text, goldens[i].output_text) << goldens[i].name;
        const FinishReason reason = goldens[i].stopped_on_bos ? FinishReason::Stop : FinishReason::Length;
        EXPECT_EQ(drained.outputs[0].outputs[0].finish_reason, reason);
        EXPECT_EQ(drained.delta_finish[0], reason);
        EXPECT_EQ(drained.outputs[0].metrics.num_prompt_tokens, int64_t(goldens[i].prompt_ids.size()));
    }
    EXPECT_TRUE(wait_for_usage_zero(metrics));
    EXPECT_EQ(engine.num_admitted_sequences(), 0);
    const std::string text = metrics.render();
    EXPECT_NE(text.find("vllm:time_to_first_token_seconds_count{model_name=\"stories\"} 7\n"),
              std::string::npos)
        << text;
}

TEST(AsyncEngine, AbortFreesBlocksBeforeTheNextStep) {
    ServerMetrics metrics("stories");
    AsyncEngine engine(make_stories_engine(), AsyncEngineOptions{8, 8}, metrics);
    engine.start();
    auto stream = std::make_shared<RequestStream>(std::vector<std::string>{"long"}, 1, true);
    ASSERT_EQ(engine.submit(stream, one_request({1}, long_params())), AdmitResult::Accepted);
    auto first = pop_within(*stream, 30);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->kind, StreamEvent::Kind::Delta);
    // Gauges are published right after the step that produced the delta.
    for (int i = 0; i < 200 && metrics.gauges().num_running == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(metrics.gauges().num_running, 1);
    EXPECT_GT(metrics.gauges().kv_cache_usage, 0.0);
    engine.abort(stream);
    Drained drained = drain(*stream, 1);
    ASSERT_TRUE(stream->all_finished());
    EXPECT_EQ(drained.outputs[0].outputs[0].finish_reason, FinishReason::Abort);
    EXPECT_LT(drained.delta_ids[0].size() + 1, 480u);  // stopped early
    EXPECT_TRUE(wait_for_usage_zero(metrics));
    EXPECT_EQ(engine.num_admitted_sequences(), 0);
}

TEST(AsyncEngine, AdmissionIsBounded) {
    ServerMetrics metrics("stories");
    AsyncEngine engine(make_stories_engine(), AsyncEngineOptions{1, 1}, metrics);
    engine.start();
    auto a = std::make_shared<RequestStream>(std::vector<std::string>{"a"}, 1, false);
    auto b = std::make_shared<RequestStream>(std::vector<std::string>{"b"}, 1, false);
    auto c = std::make_shared<RequestStream>(std::vector<std::string>{"c"}, 1, false);
    ASSERT_EQ(engine.submit(a, one_request({1}, long_params())), AdmitResult::Accepted);
    ASSERT_EQ(engine.submit(b, one_request({1}, long_params())), AdmitResult::Accepted);
    EXPECT_EQ(engine.submit(c, one_request({1}, long_params())), AdmitResult::QueueFull);
    SamplingParams three = long_params();
    three.n = 3;
    EXPECT_EQ(engine.submit(c, one_request({1}, three)), AdmitResult::TooLarge);
    engine.abort(a);
    engine.abort(b);
    EXPECT_TRUE(engine.wait_idle(30));
    EXPECT_EQ(engine.submit(c, one_request({1}, golden_params(stories_goldens()[0]))), AdmitResult::Accepted);
    drain(*c, 1);
    EXPECT_TRUE(c->all_finished());
    engine.stop_accepting();
    auto d = std::make_shared<RequestStream>(std::vector<std::string>{"d"}, 1, false);
    EXPECT_EQ(engine.submit(d, one_request({1}, long_params())), AdmitResult::ShuttingDown);
}

TEST(AsyncEngine, StopAbortsWhatIsInFlight) {
    ServerMetrics metrics("stories");
    auto engine = std::make_unique<AsyncEngine>(make_stories_engine(), AsyncEngineOptions{8, 8}, metrics);
    engine->start();
    auto stream = std::make_shared<RequestStream>(std::vector<std::string>{"p0", "p1"}, 2, false);
    SamplingParams params = long_params();
    params.n = 2;
    ASSERT_EQ(engine->submit(stream, {EngineRequest{{1}, params}, EngineRequest{{1, 403}, params}}),
              AdmitResult::Accepted);
    engine->stop();
    std::vector<RequestOutput> outputs =
        drain(*stream, 4).outputs;  // everything was pushed before stop() returned
    ASSERT_TRUE(stream->all_finished());
    ASSERT_EQ(outputs.size(), 2u);
    for (const RequestOutput& output : outputs) {
        ASSERT_EQ(output.outputs.size(), 2u);
        for (const CompletionOutput& completion : output.outputs)
            EXPECT_EQ(completion.finish_reason, FinishReason::Abort);
    }
    EXPECT_EQ(outputs[1].outputs[0].index, 2);  // prompt 1's choices are 2 and 3
    EXPECT_EQ(outputs[1].outputs[1].index, 3);
    EXPECT_EQ(engine->num_admitted_sequences(), 0);
}

}  // namespace
}  // namespace lmrun::server
