#include "engine/sequence.h"

#include <gtest/gtest.h>

#include <vector>

namespace lmrun {
namespace {

TEST(Sequence, SplitsPromptAndCompletion) {
    SamplingParams params;
    params.max_tokens = 4;
    Sequence seq(7, {10, 11, 12}, params, /*arrival_time=*/1.5);
    EXPECT_EQ(seq.seq_id, 7);
    EXPECT_EQ(seq.status, SequenceStatus::Waiting);
    EXPECT_EQ(seq.num_tokens(), 3);
    EXPECT_EQ(seq.num_prompt_tokens, 3);
    EXPECT_EQ(seq.num_completion_tokens(), 0);
    EXPECT_EQ(seq.last_token(), 12);
    EXPECT_EQ(seq.arrival_time, 1.5);
    seq.append_token(42);
    seq.append_token(43);
    EXPECT_EQ(seq.num_tokens(), 5);
    EXPECT_EQ(seq.num_completion_tokens(), 2);
    EXPECT_EQ(seq.last_token(), 43);
    const auto prompt = seq.prompt_token_ids();
    const auto completion = seq.completion_token_ids();
    EXPECT_EQ(std::vector<int32_t>(prompt.begin(), prompt.end()), (std::vector<int32_t>{10, 11, 12}));
    EXPECT_EQ(std::vector<int32_t>(completion.begin(), completion.end()), (std::vector<int32_t>{42, 43}));
    EXPECT_FALSE(seq.is_finished());
    seq.status = SequenceStatus::Finished;
    EXPECT_TRUE(seq.is_finished());
}

TEST(Sequence, NamesStatusesAndReasons) {
    EXPECT_STREQ(to_string(SequenceStatus::Waiting), "waiting");
    EXPECT_STREQ(to_string(SequenceStatus::Running), "running");
    EXPECT_STREQ(to_string(SequenceStatus::Finished), "finished");
    EXPECT_STREQ(to_string(FinishReason::Stop), "stop");
    EXPECT_STREQ(to_string(FinishReason::Length), "length");
    EXPECT_STREQ(to_string(FinishReason::Abort), "abort");
    EXPECT_STREQ(to_string(FinishReason::Error), "error");
}

}  // namespace
}  // namespace lmrun
