// Turns one logits row per sequence into the next token: penalties, greedy
// argmax (temperature 0) or temperature sampling with top-k / top-p / min-p, and
// optional log-probabilities. Randomness is counter-based: the draw for a
// sequence depends only on (seed, step), so a seeded request samples the same
// tokens alone, inside any batch, and after preemption.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace lmrun {

struct SamplingInputs {
    float temperature = 0.0f;  // 0 = greedy
    int32_t top_k = 0;         // <= 0: off
    float top_p = 1.0f;
    float min_p = 0.0f;
    float repetition_penalty = 1.0f;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    uint64_t seed = 0;
    int64_t step = 0;                         // RNG counter: the sequence's token count when sampling
    std::span<const int32_t> prompt_ids;      // repetition penalty looks at prompt + output
    std::span<const int32_t> output_ids;      // presence / frequency penalties look at output only
    std::span<const int32_t> suppressed_ids;  // ids that must not be sampled (eos before min_tokens)
    const uint32_t* allowed_token_mask =
        nullptr;                // structured output: bit id % 32 of word id / 32; null = all
    int32_t num_logprobs = -1;  // < 0: no logprobs; else top-N alternatives (N <= 20)
};

constexpr int kMaxLogprobs = 20;

struct SampleResult {
    int32_t token_id = 0;
    float logprob = 0.0f;  // of the sampled token under the raw model distribution (if requested)
    int32_t num_top = 0;
    std::array<int32_t, kMaxLogprobs> top_ids{};
    std::array<float, kMaxLogprobs> top_logprobs{};
};

class Sampler {
  public:
    // Scratch for `max_rows` rows of `vocab_size` is allocated here, never per call.
    Sampler(int64_t vocab_size, int64_t max_rows);
    // logits: [rows, vocab] (modified in place). out.size() == inputs.size() == rows.
    void sample(float* logits, std::span<const SamplingInputs> inputs, std::span<SampleResult> out);

    // A uniform double in [0, 1) from (seed, step): splitmix64 of both.
    static double uniform(uint64_t seed, int64_t step);

  private:
    void sample_row(float* logits, const SamplingInputs& inputs, int64_t row, SampleResult& out);
    void apply_penalties(float* logits, const SamplingInputs& inputs, int64_t row);
    void apply_token_mask(float* logits, const uint32_t* mask) const;
    void fill_logprobs(const float* raw_logits, const SamplingInputs& inputs, int64_t row, SampleResult& out);
    int32_t sample_filtered(float* logits, const SamplingInputs& inputs, int64_t row);

    int64_t vocab_size_;
    int64_t max_rows_;
    std::vector<int32_t> candidate_ids_;  // [max_rows, vocab]
    std::vector<float> candidate_probs_;  // [max_rows, vocab]
    std::vector<uint8_t> seen_;           // [max_rows, vocab]: presence-penalty marks
};

}  // namespace lmrun
