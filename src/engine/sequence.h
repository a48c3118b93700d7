// One completion's token stream and its place in the engine (nano-vLLM's Sequence; a
// request with n > 1 has n of them). token_ids = prompt tokens followed by completion tokens. The KV of
// token_ids[0, num_computed_tokens) is in the paged cache, in the blocks listed by
// block_table (block i holds tokens [i * block_size, (i + 1) * block_size)).
// The scheduler and block manager own the status/computed/block fields; the
// engine reads them. A decoding sequence has num_computed_tokens == num_tokens() - 1:
// its last (sampled) token is computed in the next step.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/timer.h"
#include "engine/sampling_params.h"

namespace lmrun {

namespace structured {
class GrammarMatcher;
}

// A preempted sequence is Waiting again (num_preemptions counts how often).
enum class SequenceStatus { Waiting, Running, Finished };

// Stop: eos or a stop token/string. Length: max_tokens or max_model_len.
// Abort: the client went away. Error: the sequence cannot run (message in error_message).
enum class FinishReason { None, Stop, Length, Abort, Error };

// vLLM's stop_reason: the stop_token_ids entry or the stop string that ended a sequence;
// monostate (null) when it ended on EOS or a length limit, or has not ended.
using StopReason = std::variant<std::monostate, int32_t, std::string>;

const char* to_string(SequenceStatus status);
const char* to_string(FinishReason reason);  // "none", "stop", "length", "abort", "error"

class Sequence {
  public:
    Sequence(int64_t seq_id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
             double arrival_time = now_seconds());
    ~Sequence();
    Sequence(Sequence&&) noexcept;

    int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
    int64_t num_completion_tokens() const { return num_tokens() - num_prompt_tokens; }
    int32_t last_token() const;
    bool is_finished() const { return status == SequenceStatus::Finished; }
    std::span<const int32_t> prompt_token_ids() const;
    std::span<const int32_t> completion_token_ids() const;
    void append_token(int32_t token_id) { token_ids.push_back(token_id); }

    int64_t seq_id;
    SequenceStatus status = SequenceStatus::Waiting;
    std::vector<int32_t> token_ids;
    int64_t num_prompt_tokens;
    int64_t num_computed_tokens = 0;  // tokens whose KV is in the cache (prefix-cache hits included)
    int64_t num_cached_tokens = 0;    // of those, how many came from the prefix cache at the last admission
    std::vector<int32_t> block_table;
    SamplingParams params;
    FinishReason finish_reason = FinishReason::None;
    StopReason stop_reason;     // set with finish_reason == Stop by a stop token id or stop string
    std::string error_message;  // set when finish_reason == Error
    int64_t num_preemptions = 0;
    double arrival_time;

    // BlockManager bookkeeping: the first num_hashed_blocks entries of block_table
    // are full, computed and registered in the prefix cache.
    int64_t num_hashed_blocks = 0;

    // Structured output: the completion's position in its grammar (null when
    // unconstrained), and whether the constraint applies yet (reasoning models:
    // only after params.structured_outputs->activate_after_token_id). The matcher
    // lives as long as the sequence, so preemption keeps it.
    std::unique_ptr<structured::GrammarMatcher> grammar_matcher;
    bool grammar_active = false;
};

}  // namespace lmrun
