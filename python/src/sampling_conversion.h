// Reads a Python lmrun.SamplingParams (any object with vLLM's attribute names) into the
// engine's SamplingParams. Types were checked by the Python class; ranges are checked by
// SamplingParams::validate(), whose message names the field.
#pragma once

#include <pybind11/pybind11.h>

#include "engine/sampling_params.h"

namespace lmrun::python {

// max_tokens=None (until the context is full) becomes kMaxTokensToContextEnd, resolved per
// prompt by resolve_max_tokens().
inline constexpr int64_t kMaxTokensToContextEnd = -1;

SamplingParams sampling_params_from_python(const pybind11::handle& params);

// The engine's SamplingParams for one prompt of prompt_len tokens.
SamplingParams resolve_max_tokens(SamplingParams params, int64_t prompt_len, int64_t max_model_len);

}  // namespace lmrun::python
