#include "engine/prompt_check.h"

namespace lmrun {

Status check_prompt_length(int64_t num_prompt_tokens, int64_t max_model_len) {
    if (num_prompt_tokens == 0) return with_subject(make_error("prompt must not be empty"), "prompt");
    if (num_prompt_tokens >= max_model_len) {
        return with_subject(
            make_error("prompt has {} tokens but the maximum context length is {} (prompt + at least 1 "
                       "new token)",
                       num_prompt_tokens, max_model_len),
            "prompt");
    }
    return ok_status();
}

Status check_prompt_ids(std::span<const int32_t> prompt_ids, int64_t vocab_size, int64_t max_model_len) {
    for (int32_t id : prompt_ids) {
        if (id < 0 || id >= vocab_size) {
            return with_subject(
                make_error("prompt token id {} is outside the vocabulary [0, {})", id, vocab_size), "prompt");
        }
    }
    return check_prompt_length(int64_t(prompt_ids.size()), max_model_len);
}

}  // namespace lmrun
