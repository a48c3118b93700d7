// Per-request sampling options, as the OpenAI-style API and nano-vLLM/vLLM's
// SamplingParams carry them. The scheduler reads the token-level stop rules
// (max_tokens, min_tokens, stop_token_ids, ignore_eos); the sampler reads the
// rest; stop strings are matched by the engine's detokenizing output processor.
// validate() is the boundary check: call it on every user-supplied value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "structured/structured_outputs_params.h"

namespace lmrun {

struct SamplingParams {
    float temperature = 1.0f;             // [0, 100]; 0 = greedy
    int32_t top_k = 0;                    // 0 or -1 = disabled; else >= 1
    float top_p = 1.0f;                   // (0, 1]; 1 = disabled
    float min_p = 0.0f;                   // [0, 1]; 0 = disabled
    int64_t max_tokens = 16;              // >= 1 completion tokens
    int64_t min_tokens = 0;               // [0, max_tokens]; eos/stop tokens do not stop before this many
    std::vector<std::string> stop;        // non-empty strings
    std::vector<int32_t> stop_token_ids;  // each >= 0
    bool ignore_eos = false;
    std::optional<uint64_t> seed;
    float repetition_penalty = 1.0f;  // (0, 100]; 1 = disabled
    float presence_penalty = 0.0f;    // [-2, 2]
    float frequency_penalty = 0.0f;   // [-2, 2]
    int32_t n = 1;                    // [1, 128] completions per prompt
    std::optional<int32_t> logprobs;  // [0, 20] top logprobs returned per sampled token
    bool skip_special_tokens = true;
    // The output must match this (JSON Schema, JSON object, regex, choice, EBNF grammar).
    std::optional<structured::StructuredOutputsParams> structured_outputs;

    // Error names the field, its allowed range and the value, e.g.
    // "temperature must be in [0, 100], got -1". Non-finite floats are rejected.
    Status validate() const;
};

}  // namespace lmrun
