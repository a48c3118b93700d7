#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/parallel.h"
#include "kernels/sampling.h"

namespace lmrun {
namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// When the top candidates already hold top_p of the mass, sorting them alone is
// exact; only otherwise is the whole vocabulary sorted.
constexpr int64_t kTopPPrefilter = 1024;

}  // namespace

Sampler::Sampler(int64_t vocab_size, int64_t max_rows)
    : vocab_size_(vocab_size),
      max_rows_(max_rows),
      candidate_ids_(size_t(vocab_size * max_rows)),
      candidate_probs_(size_t(vocab_size * max_rows)),
      seen_(size_t(vocab_size * max_rows)) {}

double Sampler::uniform(uint64_t seed, int64_t step) {
    uint64_t bits = splitmix64(splitmix64(seed) ^ uint64_t(step));
    return double(bits >> 11) * (1.0 / 9007199254740992.0);
}

void Sampler::sample(float* logits, std::span<const SamplingInputs> inputs, std::span<SampleResult> out) {
    const int64_t rows = int64_t(inputs.size());
    LMRUN_CHECK(rows <= max_rows_ && out.size() == inputs.size(), "sampler batch too large");
    parallel_for(rows, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            sample_row(logits + row * vocab_size_, inputs[row], row, out[row]);
        }
    });
}

void Sampler::sample_row(float* logits, const SamplingInputs& inputs, int64_t row, SampleResult& out) {
    out.num_top = 0;
    // Logprobs describe the model's own distribution (vLLM's default), before penalties and temperature.
    bool want_logprobs = inputs.num_logprobs >= 0;
    float raw_max = 0, raw_log_sum = 0;
    if (want_logprobs) {
        raw_max = *std::max_element(logits, logits + vocab_size_);
        double sum = 0;
        for (int64_t i = 0; i < vocab_size_; ++i) sum += std::exp(double(logits[i] - raw_max));
        raw_log_sum = float(std::log(sum));
        fill_logprobs(logits, inputs, row, out);
    }
    apply_penalties(logits, inputs, row);
    for (int32_t id : inputs.suppressed_ids) {
        if (id >= 0 && id < vocab_size_) logits[id] = kNegInf;
    }
    if (inputs.allowed_token_mask) apply_token_mask(logits, inputs.allowed_token_mask);
    int32_t token = inputs.temperature <= 0.0f ? kernels::argmax(logits, vocab_size_)
                                               : sample_filtered(logits, inputs, row);
    out.token_id = token;
    if (want_logprobs) {
        // The row itself was modified by sampling; fill_logprobs saved the raw logits in candidate_probs_.
        out.logprob = candidate_probs_[size_t(row * vocab_size_ + token)] - raw_max - raw_log_sum;
        for (int32_t i = 0; i < out.num_top; ++i) out.top_logprobs[i] -= raw_max + raw_log_sum;
    }
}

// Saves the raw row (for the sampled token's logprob) and the top-N raw logits.
void Sampler::fill_logprobs(const float* raw_logits, const SamplingInputs& inputs, int64_t row,
                            SampleResult& out) {
    float* saved = candidate_probs_.data() + row * vocab_size_;
    std::copy_n(raw_logits, vocab_size_, saved);
    int32_t wanted = std::min<int32_t>(inputs.num_logprobs, kMaxLogprobs);
    if (wanted <= 0) return;
    int32_t* ids = candidate_ids_.data() + row * vocab_size_;
    for (int64_t i = 0; i < vocab_size_; ++i) ids[i] = int32_t(i);
    auto by_logit = [&](int32_t a, int32_t b) {
        return saved[a] > saved[b] || (saved[a] == saved[b] && a < b);
    };
    std::partial_sort(ids, ids + wanted, ids + vocab_size_, by_logit);
    out.num_top = wanted;
    for (int32_t i = 0; i < wanted; ++i) {
        out.top_ids[i] = ids[i];
        out.top_logprobs[i] = saved[ids[i]];
    }
}

// Tokens the grammar does not allow get -inf. Whole words of 32 are the common case.
void Sampler::apply_token_mask(float* logits, const uint32_t* mask) const {
    const int64_t num_words = (vocab_size_ + 31) / 32;
    for (int64_t w = 0; w < num_words; ++w) {
        const uint32_t bits = mask[w];
        if (bits == 0xFFFFFFFFu) continue;
        const int64_t begin = w * 32;
        const int64_t end = std::min(begin + 32, vocab_size_);
        if (bits == 0) {  // most words of a narrow mask: one vector fill
            std::fill(logits + begin, logits + end, kNegInf);
            continue;
        }
        for (int64_t id = begin; id < end; ++id) {
            if (!(bits & (1u << (id - begin)))) logits[id] = kNegInf;
        }
    }
}

void Sampler::apply_penalties(float* logits, const SamplingInputs& inputs, int64_t row) {
    if (inputs.repetition_penalty != 1.0f) {
        // HF semantics: every token seen in prompt or output is penalized once.
        uint8_t* seen = seen_.data() + row * vocab_size_;
        auto penalize = [&](int32_t id) {
            if (id < 0 || id >= vocab_size_ || seen[id]) return;
            seen[id] = 1;
            logits[id] = logits[id] > 0 ? logits[id] / inputs.repetition_penalty
                                        : logits[id] * inputs.repetition_penalty;
        };
        for (int32_t id : inputs.prompt_ids) penalize(id);
        for (int32_t id : inputs.output_ids) penalize(id);
        for (int32_t id : inputs.prompt_ids) seen[id] = 0;
        for (int32_t id : inputs.output_ids) seen[id] = 0;
    }
    if (inputs.presence_penalty != 0.0f || inputs.frequency_penalty != 0.0f) {
        // OpenAI semantics over generated tokens: -= frequency * count + presence * (count > 0).
        uint8_t* seen = seen_.data() + row * vocab_size_;
        for (int32_t id : inputs.output_ids) {
            if (id < 0 || id >= vocab_size_) continue;
            logits[id] -= inputs.frequency_penalty;
            if (!seen[id]) logits[id] -= inputs.presence_penalty;
            seen[id] = 1;
        }
        for (int32_t id : inputs.output_ids) {
            if (id >= 0 && id < vocab_size_) seen[id] = 0;
        }
    }
}

// Temperature softmax, then top-k, top-p and min-p, then one draw from what is left.
int32_t Sampler::sample_filtered(float* logits, const SamplingInputs& inputs, int64_t row) {
    kernels::softmax(logits, vocab_size_, inputs.temperature);
    const float* probs = logits;
    int32_t* ids = candidate_ids_.data() + row * vocab_size_;
    int64_t count = vocab_size_;
    for (int64_t i = 0; i < vocab_size_; ++i) ids[i] = int32_t(i);
    auto by_prob = [&](int32_t a, int32_t b) {
        return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
    };

    bool filtered = inputs.top_k > 0 || inputs.top_p < 1.0f || inputs.min_p > 0.0f;
    if (filtered) {
        if (inputs.top_k > 0 && inputs.top_k < count) {
            std::nth_element(ids, ids + inputs.top_k, ids + count, by_prob);
            count = inputs.top_k;
        }
        if (inputs.top_p < 1.0f) {
            int64_t head = std::min(count, kTopPPrefilter);
            std::partial_sort(ids, ids + head, ids + count, by_prob);
            double total = 0, head_sum = 0;
            for (int64_t i = 0; i < count; ++i) total += probs[ids[i]];
            for (int64_t i = 0; i < head; ++i) head_sum += probs[ids[i]];
            if (head_sum < inputs.top_p * total) std::sort(ids, ids + count, by_prob);
            double cumulative = 0;
            int64_t keep = 0;
            while (keep < count && cumulative < inputs.top_p * total) cumulative += probs[ids[keep++]];
            count = std::max<int64_t>(keep, 1);
        }
        if (inputs.min_p > 0.0f) {
            float best = 0;
            for (int64_t i = 0; i < count; ++i) best = std::max(best, probs[ids[i]]);
            float threshold = inputs.min_p * best;
            int64_t kept = 0;
            for (int64_t i = 0; i < count; ++i) {
                if (probs[ids[i]] >= threshold) ids[kept++] = ids[i];
            }
            count = kept;
        }
        std::sort(ids, ids + count);  // a canonical order makes the draw independent of sort internals
    }
    double total = 0;
    for (int64_t i = 0; i < count; ++i) total += probs[ids[i]];
    double target = uniform(inputs.seed, inputs.step) * total;
    double cumulative = 0;
    for (int64_t i = 0; i < count; ++i) {
        cumulative += probs[ids[i]];
        if (cumulative > target && probs[ids[i]] > 0) return ids[i];
    }
    // Rounding left the target past the last candidate: take the last one with mass.
    for (int64_t i = count - 1; i >= 0; --i) {
        if (probs[ids[i]] > 0) return ids[i];
    }
    return ids[0];
}

}  // namespace lmrun
