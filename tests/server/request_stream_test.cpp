#include "server/request_stream.h"

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
    auto event = stream.pop(0);
    ASSERT_TRUE(event);
    EXPECT_EQ(event->kind, StreamEvent::Kind::Delta);
    EXPECT_EQ(event->delta.index, 3);
    EXPECT_EQ(event->delta.text, "x");
    event = stream.pop(0);
    ASSERT_TRUE(event);
    EXPECT_EQ(event->kind, StreamEvent::Kind::Finished);
    EXPECT_EQ(event->prompt_index, 1);
    EXPECT_EQ(event->output.outputs[0].index, 2);
    EXPECT_EQ(event->output.outputs[1].index, 3);
    EXPECT_FALSE(stream.all_finished());  // prompt 0 still runs
    EXPECT_FALSE(stream.pop(0.01));
}

TEST(RequestStream, NonStreamingDropsDeltas) {
    RequestStream stream({"r-0"}, 1, false);
    stream.push_delta(0, delta(0, "x"));
    EXPECT_FALSE(stream.pop(0));
    stream.push_finished(0, finished_output(1));
    ASSERT_TRUE(stream.pop(0));
    EXPECT_TRUE(stream.all_finished());
}

TEST(RequestStream, WaitAllAcrossThreads) {
    RequestStream stream({"a", "b", "c"}, 1, true);
    std::thread producer([&] {
        for (int32_t p : {2, 0, 1}) {
            stream.push_delta(p, delta(0, "t" + std::to_string(p)));
            RequestOutput output = finished_output(1);
            output.request_id = "id" + std::to_string(p);
            stream.push_finished(p, output);
        }
    });
    std::vector<RequestOutput> outputs;
    EXPECT_TRUE(stream.wait_all(outputs, 0.01, [] { return true; }));
    producer.join();
    ASSERT_EQ(outputs.size(), 3u);
    EXPECT_EQ(outputs[0].request_id, "id0");  // ordered by prompt, not by arrival
    EXPECT_EQ(outputs[1].request_id, "id1");
    EXPECT_EQ(outputs[2].request_id, "id2");
    EXPECT_TRUE(stream.all_finished());
}

TEST(RequestStream, WaitAllGivesUpWhenTold) {
    RequestStream stream({"a"}, 1, false);
    std::vector<RequestOutput> outputs;
    int polls = 0;
    EXPECT_FALSE(stream.wait_all(outputs, 0.001, [&] { return ++polls < 3; }));
    EXPECT_EQ(polls, 3);
}

}  // namespace
}  // namespace lmrun::server
