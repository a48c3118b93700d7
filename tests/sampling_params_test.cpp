#include "engine/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

namespace lmrun {
namespace {

TEST(SamplingParams, DefaultsAreValid) {
    EXPECT_TRUE(SamplingParams{}.validate().ok());
}

TEST(SamplingParams, BoundaryValuesAreValid) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.top_k = -1;
    params.top_p = 1.0f;
    params.min_p = 1.0f;
    params.max_tokens = 1;
    params.min_tokens = 1;
    params.stop = {"</s>"};
    params.stop_token_ids = {0, 2};
    params.repetition_penalty = 100.0f;
    params.presence_penalty = -2.0f;
    params.frequency_penalty = 2.0f;
    params.n = 128;
    params.logprobs = 20;
    EXPECT_TRUE(params.validate().ok()) << params.validate().error().message;
    params.temperature = 100.0f;
    params.top_k = 1;
    params.logprobs = 0;
    EXPECT_TRUE(params.validate().ok()) << params.validate().error().message;
}

struct InvalidCase {
    std::string name;
    std::function<void(SamplingParams&)> mutate;
    std::string expected_message;
};

TEST(SamplingParams, RejectsEachInvalidValueNamingTheField) {
    const std::vector<InvalidCase> cases = {
        {"negative temperature", [](SamplingParams& p) { p.temperature = -1.0f; },
         "temperature must be in [0, 100], got -1"},
        {"huge temperature", [](SamplingParams& p) { p.temperature = 101.0f; },
         "temperature must be in [0, 100], got 101"},
        {"nan temperature", [](SamplingParams& p) { p.temperature = NAN; },
         "temperature must be in [0, 100], got nan"},
        {"top_k -2", [](SamplingParams& p) { p.top_k = -2; },
         "top_k must be -1 or 0 (disabled) or >= 1, got -2"},
        {"top_p 0", [](SamplingParams& p) { p.top_p = 0.0f; }, "top_p must be in (0, 1], got 0"},
        {"top_p 1.5", [](SamplingParams& p) { p.top_p = 1.5f; }, "top_p must be in (0, 1], got 1.5"},
        {"min_p -0.1", [](SamplingParams& p) { p.min_p = -0.1f; }, "min_p must be in [0, 1], got -0.1"},
        {"min_p 2", [](SamplingParams& p) { p.min_p = 2.0f; }, "min_p must be in [0, 1], got 2"},
        {"max_tokens 0", [](SamplingParams& p) { p.max_tokens = 0; }, "max_tokens must be >= 1, got 0"},
        {"min_tokens -1", [](SamplingParams& p) { p.min_tokens = -1; },
         "min_tokens must be in [0, max_tokens=16], got -1"},
        {"min_tokens > max_tokens", [](SamplingParams& p) { p.min_tokens = 17; },
         "min_tokens must be in [0, max_tokens=16], got 17"},
        {"empty stop string",
         [](SamplingParams& p) {
             p.stop = {"a", ""};
         },
         "stop[1] must not be an empty string"},
        {"negative stop token",
         [](SamplingParams& p) {
             p.stop_token_ids = {5, -3};
         },
         "stop_token_ids[1] must be >= 0, got -3"},
        {"repetition_penalty 0", [](SamplingParams& p) { p.repetition_penalty = 0.0f; },
         "repetition_penalty must be in (0, 100], got 0"},
        {"presence_penalty -3", [](SamplingParams& p) { p.presence_penalty = -3.0f; },
         "presence_penalty must be in [-2, 2], got -3"},
        {"frequency_penalty 2.5", [](SamplingParams& p) { p.frequency_penalty = 2.5f; },
         "frequency_penalty must be in [-2, 2], got 2.5"},
        {"n 0", [](SamplingParams& p) { p.n = 0; }, "n must be in [1, 128], got 0"},
        {"n 129", [](SamplingParams& p) { p.n = 129; }, "n must be in [1, 128], got 129"},
        {"logprobs -1", [](SamplingParams& p) { p.logprobs = -1; }, "logprobs must be in [0, 20], got -1"},
        {"logprobs 21", [](SamplingParams& p) { p.logprobs = 21; }, "logprobs must be in [0, 20], got 21"},
    };
    for (const InvalidCase& test_case : cases) {
        SCOPED_TRACE(test_case.name);
        SamplingParams params;
        test_case.mutate(params);
        Status status = params.validate();
        ASSERT_FALSE(status.ok());
        EXPECT_EQ(status.error().message, test_case.expected_message);
    }
}

}  // namespace
}  // namespace lmrun
