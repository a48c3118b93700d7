#include "engine/prompt_check.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/scheduler.h"

namespace lmrun {
namespace {

// vLLM's boundary: a prompt of max_model_len tokens leaves no room to generate.
TEST(PromptCheck, APromptMustLeaveRoomForOneToken) {
    EXPECT_TRUE(check_prompt_length(1, 512).ok());
    EXPECT_TRUE(check_prompt_length(511, 512).ok());
    for (int64_t num_tokens : {int64_t(512), int64_t(513)}) {
        Status refused = check_prompt_length(num_tokens, 512);
        ASSERT_FALSE(refused.ok());
        EXPECT_EQ(refused.error().subject, "prompt");
        EXPECT_EQ(refused.error().message, "prompt has " + std::to_string(num_tokens) +
                                               " tokens but the maximum context length is 512 (prompt + "
                                               "at least 1 new token)");
    }
    Status empty = check_prompt_length(0, 512);
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.error().message, "prompt must not be empty");
}

TEST(PromptCheck, IdsMustBeInTheVocabulary) {
    EXPECT_TRUE(check_prompt_ids(std::vector<int32_t>{0, 5, 9}, 10, 512).ok());
    for (int32_t bad : {-1, 10}) {
        Status refused = check_prompt_ids(std::vector<int32_t>{1, bad}, 10, 512);
        ASSERT_FALSE(refused.ok());
        EXPECT_EQ(refused.error().subject, "prompt");
        EXPECT_NE(refused.error().message.find(std::to_string(bad)), std::string::npos);
    }
    EXPECT_FALSE(check_prompt_ids(std::vector<int32_t>(512, 1), 10, 512).ok());
    EXPECT_FALSE(check_prompt_ids({}, 10, 512).ok());
}

// The scheduler applies the same boundary (at add and again at admission).
TEST(PromptCheck, TheSchedulerAgrees) {
    SchedulerConfig config;
    config.max_model_len = 512;
    BlockManager block_manager(64, 16);
    Scheduler scheduler(config, block_manager, {2});
    EXPECT_TRUE(scheduler.check_prompt(511).ok());
    EXPECT_FALSE(scheduler.check_prompt(512).ok());
}

}  // namespace
}  // namespace lmrun
