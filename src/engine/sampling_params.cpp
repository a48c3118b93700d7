#include "engine/sampling_params.h"

#include <cmath>

namespace lmrun {
namespace {

// Written as !(lo <= x <= hi) so that NaN is rejected too.
Status check_closed(const char* field, float value, float lo, float hi) {
    if (!(value >= lo && value <= hi))
        return make_error("{} must be in [{}, {}], got {}", field, lo, hi, value);
    return ok_status();
}

Status check_half_open(const char* field, float value, float lo, float hi) {
    if (!(value > lo && value <= hi))
        return make_error("{} must be in ({}, {}], got {}", field, lo, hi, value);
    return ok_status();
}

Status validate_lists(const SamplingParams& params) {
    for (size_t i = 0; i < params.stop.size(); ++i) {
        if (params.stop[i].empty()) return make_error("stop[{}] must not be an empty string", i);
    }
    for (size_t i = 0; i < params.stop_token_ids.size(); ++i) {
        if (params.stop_token_ids[i] < 0) {
            return make_error("stop_token_ids[{}] must be >= 0, got {}", i, params.stop_token_ids[i]);
        }
    }
    return ok_status();
}

}  // namespace

Status SamplingParams::validate() const {
    LMRUN_RETURN_IF_ERROR(check_closed("temperature", temperature, 0, 100));
    if (top_k < -1) return make_error("top_k must be -1 or 0 (disabled) or >= 1, got {}", top_k);
    LMRUN_RETURN_IF_ERROR(check_half_open("top_p", top_p, 0, 1));
    LMRUN_RETURN_IF_ERROR(check_closed("min_p", min_p, 0, 1));
    if (max_tokens < 1) return make_error("max_tokens must be >= 1, got {}", max_tokens);
    if (min_tokens < 0 || min_tokens > max_tokens) {
        return make_error("min_tokens must be in [0, max_tokens={}], got {}", max_tokens, min_tokens);
    }
    LMRUN_RETURN_IF_ERROR(validate_lists(*this));
    LMRUN_RETURN_IF_ERROR(check_half_open("repetition_penalty", repetition_penalty, 0, 100));
    LMRUN_RETURN_IF_ERROR(check_closed("presence_penalty", presence_penalty, -2, 2));
    LMRUN_RETURN_IF_ERROR(check_closed("frequency_penalty", frequency_penalty, -2, 2));
    if (n < 1 || n > 128) return make_error("n must be in [1, 128], got {}", n);
    if (logprobs && (*logprobs < 0 || *logprobs > 20)) {
        return make_error("logprobs must be in [0, 20], got {}", *logprobs);
    }
    if (structured_outputs) {
        using Kind = structured::StructuredOutputsParams::Kind;
        const auto& constraint = *structured_outputs;
        if (constraint.kind == Kind::Choice && constraint.choices.empty())
            return make_error("structured_outputs.choice must list at least one string");
        if ((constraint.kind == Kind::Regex || constraint.kind == Kind::Grammar ||
             constraint.kind == Kind::JsonSchema) &&
            constraint.text.empty()) {
            return make_error("structured_outputs.{} must not be empty",
                              constraint.kind == Kind::Regex     ? "regex"
                              : constraint.kind == Kind::Grammar ? "grammar"
                                                                 : "json");
        }
    }
    return ok_status();
}

}  // namespace lmrun
