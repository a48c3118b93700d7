#include "server/request_stream.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

namespace lmrun::server {
namespace {

CompletionDelta delta(int32_t index, const std::string& text) {
    CompletionDelta result;
    result.index = index;
    result.text = text;
    return result;
}

RequestOutput finished_output(int32_t n) {
    RequestOutput output;
    output.finished = true;
    for (int32_t i = 0; i < n; ++i) {
        CompletionOutput completion;
        completion.index = i;
        output.outputs.push_back(completion);
    }
    return output;
}

TEST(RequestStream, GlobalChoiceIndices) {
    RequestStream stream({"r-0", "r-1"}, 2, true);
    stream.push_delta(1, delta(1, "x"));  // prompt 1, completion 1 -> choice 3
    stream.push_finished(1, finished_output(2));
    auto event = stream.try_pop();
    ASSERT_TRUE(event);
    EXPECT_EQ(event->kind, StreamEvent::Kind::Delta);
    EXPECT_EQ(event->delta.index, 3);
    EXPECT_EQ(event->delta.text, "x");
    event = stream.try_pop();
    ASSERT_TRUE(event);
    EXPECT_EQ(event->kind, StreamEvent::Kind::Finished);
    EXPECT_EQ(event->prompt_index, 1);
    EXPECT_EQ(event->output.outputs[0].index, 2);
    EXPECT_EQ(event->output.outputs[1].index, 3);
    EXPECT_FALSE(stream.all_finished());  // prompt 0 still runs
    EXPECT_FALSE(stream.try_pop());
}

TEST(RequestStream, NonStreamingDropsDeltas) {
    RequestStream stream({"r-0"}, 1, false);
    stream.push_delta(0, delta(0, "x"));
    EXPECT_FALSE(stream.try_pop());
    stream.push_finished(0, finished_output(1));
    ASSERT_TRUE(stream.try_pop());
    EXPECT_TRUE(stream.all_finished());
}

TEST(RequestStream, AnEmptyPopLeavesAWakeUpThatTheNextPushCallsOnce) {
    RequestStream stream({"a", "b"}, 1, true);
    int wakes = 0;
    EXPECT_FALSE(stream.try_pop([&] { ++wakes; }));
    EXPECT_EQ(wakes, 0);
    stream.push_delta(0, delta(0, "x"));
    EXPECT_EQ(wakes, 1);
    stream.push_delta(0, delta(0, "y"));  // one call per wake-up left
    EXPECT_EQ(wakes, 1);
    EXPECT_EQ(stream.try_pop([&] { ++wakes; })->delta.text, "x");  // not empty: no wake-up left
    EXPECT_EQ(stream.try_pop()->delta.text, "y");
    stream.push_finished(1, finished_output(1));
    EXPECT_EQ(wakes, 1);
}

TEST(RequestStream, WakeUpsAcrossThreadsCollectEveryOutput) {
    RequestStream stream({"a", "b", "c"}, 1, false);
    std::mutex mutex;
    std::condition_variable woken;
    bool wake_pending = false;
    auto wake = [&] {
        std::lock_guard lock(mutex);
        wake_pending = true;
        woken.notify_one();
    };
    std::thread producer([&] {
        for (int32_t p : {2, 0, 1}) {
            RequestOutput output = finished_output(1);
            output.request_id = "id" + std::to_string(p);
            stream.push_finished(p, output);
        }
    });
    std::vector<std::string> ids(3);
    while (!stream.all_finished()) {
        std::optional<StreamEvent> event = stream.try_pop(wake);
        if (!event) {
            std::unique_lock lock(mutex);
            woken.wait(lock, [&] { return wake_pending; });
            wake_pending = false;
            continue;
        }
        ids[size_t(event->prompt_index)] = event->output.request_id;
    }
    producer.join();
    EXPECT_EQ(ids, (std::vector<std::string>{"id0", "id1", "id2"}));
}

}  // namespace
}  // namespace lmrun::server
