#include "router/sse_relay.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

using Poll = server::BodyStream::Poll;

TEST(SseRelay, PassesWholeEventsAsSoonAsTheyAreComplete) {
    SseRelay relay({}, {});
    int wakes = 0;
    std::string out;
    EXPECT_EQ(relay.poll(out, [&] { ++wakes; }), Poll::Pending);
    EXPECT_TRUE(relay.push("data: {\"a\":1}\n\ndata: {\"b\""));
    EXPECT_EQ(wakes, 1);
    EXPECT_EQ(relay.poll(out, [&] { ++wakes; }), Poll::Data);
    EXPECT_EQ(out, "data: {\"a\":1}\n\n");  // the half event waits for its end
    out.clear();
    EXPECT_EQ(relay.poll(out, [&] { ++wakes; }), Poll::Pending);
    EXPECT_TRUE(relay.push(":2}\n\ndata: [DONE]\n\n"));
    relay.end();
    EXPECT_EQ(relay.poll(out, [] {}), Poll::End);
    EXPECT_EQ(out, "data: {\"b\":2}\n\ndata: [DONE]\n\n");
}

TEST(SseRelay, AFailureDropsTheHalfEventAndEndsWithTheErrorEvent) {
    SseRelay relay({}, {});
    relay.push("data: {\"a\":1}\n\ndata: {\"trunc");
    relay.fail("data: {\"error\":{}}\n\n");
    std::string out;
    EXPECT_EQ(relay.poll(out, [] {}), Poll::End);
    EXPECT_EQ(out, "data: {\"a\":1}\n\ndata: {\"error\":{}}\n\n");
    relay.end();  // too late: already ended
    out.clear();
    EXPECT_EQ(relay.poll(out, [] {}), Poll::End);
    EXPECT_EQ(out, "");
}

TEST(SseRelay, RefusesPastItsBufferAndAsksToResumeOnceDrained) {
    int drained = 0;
    SseRelay relay([&] { ++drained; }, {}, 32);
    const std::string event = "data: 0123456789abcdefghij\n\n";  // 28 bytes
    EXPECT_TRUE(relay.push(event));
    EXPECT_TRUE(relay.push(event));   // 56 >= 32 now
    EXPECT_FALSE(relay.push(event));  // refused: the upstream pauses
    std::string out;
    EXPECT_EQ(relay.poll(out, [] {}), Poll::Data);
    EXPECT_EQ(out, event + event);
    EXPECT_EQ(drained, 1);
    EXPECT_TRUE(relay.push(event));
}

TEST(SseRelay, TheClientLeavingBeforeTheEndIsReported) {
    int gone = 0;
    SseRelay relay({}, [&] { ++gone; });
    relay.push("data: 1\n\n");
    relay.finished(false);
    EXPECT_EQ(gone, 1);
    EXPECT_TRUE(relay.push("data: 2\n\n"));  // dropped, never refused
    SseRelay complete({}, [&] { ++gone; });
    complete.end();
    complete.finished(true);
    EXPECT_EQ(gone, 1);
}

}  // namespace
}  // namespace lmrun::router
