// The checks a prompt must pass before it is queued, written once so that every way into
// the engine agrees: LLMEngine::add_request, the Scheduler (again at admission) and the
// server's request validation (server/prompt_processor.cpp) all call these.
#pragma once

#include <cstdint>
#include <span>

#include "core/result.h"

namespace lmrun {

// A prompt must leave room for at least one generated token: a prompt of max_model_len tokens
// or more is refused (as vLLM's OpenAI server refuses it). Error subject: "prompt".
Status check_prompt_length(int64_t num_prompt_tokens, int64_t max_model_len);

// Non-empty, every id in [0, vocab_size), and check_prompt_length. Error subject: "prompt".
Status check_prompt_ids(std::span<const int32_t> prompt_ids, int64_t vocab_size, int64_t max_model_len);

}  // namespace lmrun
