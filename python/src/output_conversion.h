// The engine's output records (RequestOutput, CompletionOutput, CompletionDelta, TokenLogprob,
// RequestMetrics) as read-only Python objects of lmrun._lmrun; python/lmrun/outputs.py builds
// vLLM's RequestOutput / CompletionOutput from them.
#pragma once

#include <pybind11/pybind11.h>

#include "engine/request_output.h"

namespace lmrun::python {

// vLLM's finish_reason: "stop", "length", "abort", "error", or None while running.
pybind11::object finish_reason_to_python(FinishReason reason);

// vLLM's stop_reason: the stop token id (int) or stop string (str) that ended a completion, or None.
pybind11::object stop_reason_to_python(const CompletionOutput& completion);

void register_output_classes(pybind11::module_& module);

}  // namespace lmrun::python
