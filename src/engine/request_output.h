// What the engine hands back for a request: per-step deltas for streaming and
// the final result (text, token ids, finish reason, logprobs, timings), shaped
// like vLLM's RequestOutput / CompletionOutput.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/sequence.h"

namespace lmrun {

struct TokenLogprob {
    int32_t token_id = 0;
    float logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> top;  // the most likely alternatives, best first
};

// One of the n completions of a request.
struct CompletionOutput {
    int32_t index = 0;
    std::string text;
    std::vector<int32_t> token_ids;
    std::vector<TokenLogprob> logprobs;  // one per token when logprobs were requested
    FinishReason finish_reason = FinishReason::None;
    StopReason stop_reason;  // the stop token id or stop string that ended it (not EOS or length)
    std::string error_message;
};

struct RequestMetrics {
    double arrival_time = 0;
    double first_scheduled_time = 0;
    double first_token_time = 0;
    double last_token_time = 0;
    double finished_time = 0;
    int64_t num_prompt_tokens = 0;
    int64_t num_cached_tokens = 0;  // prompt tokens served from the prefix cache
    int64_t num_generation_tokens = 0;
};

struct RequestOutput {
    std::string request_id;
    std::vector<int32_t> prompt_token_ids;
    std::vector<CompletionOutput> outputs;
    bool finished = false;
    RequestMetrics metrics;
};

// What one step added to one completion (streaming).
struct CompletionDelta {
    std::string request_id;
    int32_t index = 0;
    std::string text;
    std::vector<int32_t> token_ids;
    std::vector<TokenLogprob> logprobs;
    bool finished = false;
    FinishReason finish_reason = FinishReason::None;
    std::string error_message;
};

}  // namespace lmrun
