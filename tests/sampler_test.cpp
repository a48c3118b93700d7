// Sampler unit tests on hand-made logits: greedy, top-k/top-p/min-p filtering,
// penalties, suppression, logprobs, and counter-based seeding.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

namespace lmrun {
namespace {

std::vector<float> random_logits(int64_t vocab, uint64_t seed) {
    std::mt19937 rng{static_cast<uint32_t>(seed)};
    std::normal_distribution<float> normal(0.f, 2.f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& value : logits) value = normal(rng);
    return logits;
}

int32_t sample_one(Sampler& sampler, std::vector<float> logits, const SamplingInputs& inputs) {
    SampleResult result;
    sampler.sample(logits.data(), std::span(&inputs, 1), std::span(&result, 1));
    return result.token_id;
}

TEST(Sampler, GreedyTakesTheArgmax) {
    Sampler sampler(100, 4);
    auto logits = random_logits(100, 1);
    int32_t best = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(sample_one(sampler, logits, SamplingInputs{}), best);
}

TEST(Sampler, TopKOneEqualsGreedyAtAnyTemperature) {
    Sampler sampler(1000, 1);
    for (uint64_t seed = 0; seed < 20; ++seed) {
        auto logits = random_logits(1000, seed);
        SamplingInputs inputs;
        inputs.temperature = 1.5f;
        inputs.top_k = 1;
        inputs.seed = seed;
        EXPECT_EQ(sample_one(sampler, logits, inputs), sample_one(sampler, logits, SamplingInputs{}));
    }
}

TEST(Sampler, SameSeedAndStepGiveTheSameTokenInAnyBatch) {
    Sampler sampler(500, 8);
    auto logits = random_logits(500, 3);
    SamplingInputs inputs;
    inputs.temperature = 1.0f;
    inputs.seed = 1234;
    inputs.step = 17;
    int32_t alone = sample_one(sampler, logits, inputs);
    // The same row at position 5 of a batch of 8 unrelated rows.
    std::vector<float> batch;
    std::vector<SamplingInputs> batch_inputs(8);
    for (int row = 0; row < 8; ++row) {
        auto other = row == 5 ? logits : random_logits(500, 100 + row);
        batch.insert(batch.end(), other.begin(), other.end());
        batch_inputs[row].temperature = 1.0f;
        batch_inputs[row].seed = uint64_t(row);
        if (row == 5) batch_inputs[row] = inputs;
    }
    std::vector<SampleResult> results(8);
    sampler.sample(batch.data(), batch_inputs, results);
    EXPECT_EQ(results[5].token_id, alone);
}

TEST(Sampler, DrawsFollowTheDistribution) {
    // Logits ln(1), ln(2), ln(3), ln(4): probabilities 0.1 .. 0.4.
    Sampler sampler(4, 1);
    std::vector<float> logits = {0.f, std::log(2.f), std::log(3.f), std::log(4.f)};
    std::map<int32_t, int> counts;
    SamplingInputs inputs;
    inputs.temperature = 1.0f;
    inputs.seed = 99;
    const int draws = 20000;
    for (int step = 0; step < draws; ++step) {
        inputs.step = step;
        ++counts[sample_one(sampler, logits, inputs)];
    }
    for (int id = 0; id < 4; ++id) EXPECT_NEAR(double(counts[id]) / draws, 0.1 * (id + 1), 0.015) << id;
}

TEST(Sampler, TopPAndMinPKeepOnlyTheHead) {
    Sampler sampler(4, 1);
    std::vector<float> logits = {0.f, std::log(2.f), std::log(3.f), std::log(4.f)};  // 0.1 0.2 0.3 0.4
    SamplingInputs inputs;
    inputs.temperature = 1.0f;
    inputs.top_p = 0.65f;  // 0.4 + 0.3 reaches it: ids 3 and 2 only
    for (int step = 0; step < 500; ++step) {
        inputs.step = step;
        int32_t id = sample_one(sampler, logits, inputs);
        EXPECT_TRUE(id == 2 || id == 3) << id;
    }
    inputs.top_p = 1.0f;
    inputs.min_p = 0.6f;  // keeps p >= 0.24: ids 2 and 3
    for (int step = 0; step < 500; ++step) {
        inputs.step = step;
        int32_t id = sample_one(sampler, logits, inputs);
        EXPECT_TRUE(id == 2 || id == 3) << id;
    }
}

TEST(Sampler, PenaltiesAndSuppressionChangeTheGreedyChoice) {
    Sampler sampler(3, 1);
    std::vector<float> logits = {1.0f, 2.0f, 1.5f};
    std::vector<int32_t> history = {1};
    SamplingInputs inputs;
    inputs.output_ids = history;
    inputs.frequency_penalty = 1.0f;  // id 1: 2.0 - 1.0 = 1.0 < 1.5
    EXPECT_EQ(sample_one(sampler, logits, inputs), 2);
    inputs = SamplingInputs{};
    inputs.prompt_ids = history;
    inputs.repetition_penalty = 2.0f;  // id 1: 2.0 / 2 = 1.0
    EXPECT_EQ(sample_one(sampler, logits, inputs), 2);
    inputs = SamplingInputs{};
    std::vector<int32_t> banned = {1, 2};
    inputs.suppressed_ids = banned;
    EXPECT_EQ(sample_one(sampler, logits, inputs), 0);
}

TEST(Sampler, LogprobsAreTheModelsLogSoftmax) {
    Sampler sampler(4, 1);
    std::vector<float> logits = {0.f, std::log(2.f), std::log(3.f), std::log(4.f)};
    SamplingInputs inputs;
    inputs.num_logprobs = 2;
    SampleResult result;
    sampler.sample(logits.data(), std::span(&inputs, 1), std::span(&result, 1));
    EXPECT_EQ(result.token_id, 3);
    EXPECT_NEAR(result.logprob, std::log(0.4), 1e-5);
    ASSERT_EQ(result.num_top, 2);
    EXPECT_EQ(result.top_ids[0], 3);
    EXPECT_EQ(result.top_ids[1], 2);
    EXPECT_NEAR(result.top_logprobs[1], std::log(0.3), 1e-5);
}

}  // namespace
}  // namespace lmrun

namespace lmrun {
namespace {

// Structured output: only tokens whose bit is set can come out, greedy or sampled with any filter.
TEST(Sampler, TokenMaskAllowsOnlyItsTokens) {
    const int64_t vocab = 1000;
    Sampler sampler(vocab, 1);
    std::vector<uint32_t> mask(size_t((vocab + 31) / 32), 0);
    const std::vector<int32_t> allowed = {3, 64, 65, 999};
    for (int32_t id : allowed) mask[size_t(id) / 32] |= 1u << (id % 32);
    for (uint64_t seed = 0; seed < 50; ++seed) {
        auto logits = random_logits(vocab, seed);
        SamplingInputs inputs;
        inputs.allowed_token_mask = mask.data();
        inputs.temperature = seed % 2 ? 1.0f : 0.0f;
        inputs.top_p = seed % 3 == 0 ? 0.5f : 1.0f;
        inputs.seed = seed;
        const int32_t token = sample_one(sampler, logits, inputs);
        EXPECT_NE(std::find(allowed.begin(), allowed.end(), token), allowed.end()) << token;
        if (inputs.temperature == 0.0f) {
            int32_t best = allowed[0];
            for (int32_t id : allowed) {
                if (logits[size_t(id)] > logits[size_t(best)]) best = id;
            }
            EXPECT_EQ(token, best);
        }
    }
}

}  // namespace
}  // namespace lmrun
