#include "engine/sequence.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "structured/grammar_matcher.h"

namespace lmrun {

const char* to_string(SequenceStatus status) {
    switch (status) {
        case SequenceStatus::Waiting:
            return "waiting";
        case SequenceStatus::Running:
            return "running";
        case SequenceStatus::Finished:
            return "finished";
    }
    return "unknown";
}

const char* to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::None:
            return "none";
        case FinishReason::Stop:
            return "stop";
        case FinishReason::Length:
            return "length";
        case FinishReason::Abort:
            return "abort";
        case FinishReason::Error:
            return "error";
    }
    return "unknown";
}

Sequence::Sequence(int64_t seq_id, std::vector<int32_t> prompt_token_ids, SamplingParams params,
                   double arrival_time)
    : seq_id(seq_id),
      token_ids(std::move(prompt_token_ids)),
      num_prompt_tokens(static_cast<int64_t>(token_ids.size())),
      params(std::move(params)),
      arrival_time(arrival_time) {
    // Completion tokens are appended one per step; reserving avoids regrowth while decoding
    // (capped: max_tokens may be large and most requests stop early).
    const int64_t num_reserved = std::clamp<int64_t>(this->params.max_tokens, 0, 4096);
    token_ids.reserve(token_ids.size() + static_cast<size_t>(num_reserved));
}

Sequence::~Sequence() = default;
Sequence::Sequence(Sequence&&) noexcept = default;

int32_t Sequence::last_token() const {
    LMRUN_CHECK(!token_ids.empty(), "sequence %lld has no tokens", static_cast<long long>(seq_id));
    return token_ids.back();
}

std::span<const int32_t> Sequence::prompt_token_ids() const {
    return std::span<const int32_t>(token_ids).first(static_cast<size_t>(num_prompt_tokens));
}

std::span<const int32_t> Sequence::completion_token_ids() const {
    return std::span<const int32_t>(token_ids).subspan(static_cast<size_t>(num_prompt_tokens));
}

}  // namespace lmrun
