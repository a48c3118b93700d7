#include "output_conversion.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace lmrun::python {

py::object finish_reason_to_python(FinishReason reason) {
    switch (reason) {
        case FinishReason::None:
            return py::none();
        case FinishReason::Stop:
            return py::str("stop");
        case FinishReason::Length:
            return py::str("length");
        case FinishReason::Abort:
            return py::str("abort");
        case FinishReason::Error:
            return py::str("error");
    }
    return py::none();
}

py::object stop_reason_to_python(const CompletionOutput& completion) {
    if (const auto* token_id = std::get_if<int32_t>(&completion.stop_reason)) return py::int_(*token_id);
    if (const auto* text = std::get_if<std::string>(&completion.stop_reason)) return py::str(*text);
    return py::none();
}

void register_output_classes(py::module_& m) {
    py::class_<TokenLogprob>(m, "TokenLogprob")
        .def_readonly("token_id", &TokenLogprob::token_id)
        .def_readonly("logprob", &TokenLogprob::logprob)
        .def_readonly("top", &TokenLogprob::top, "The most likely (token_id, logprob) pairs, best first.");

    py::class_<CompletionOutput>(m, "CompletionOutput")
        .def_readonly("index", &CompletionOutput::index)
        .def_readonly("text", &CompletionOutput::text)
        .def_readonly("token_ids", &CompletionOutput::token_ids)
        .def_readonly("logprobs", &CompletionOutput::logprobs)
        .def_property_readonly(
            "finish_reason",
            [](const CompletionOutput& self) { return finish_reason_to_python(self.finish_reason); })
        .def_property_readonly("stop_reason", &stop_reason_to_python)
        .def_readonly("error_message", &CompletionOutput::error_message);

    py::class_<RequestMetrics>(m, "RequestMetrics")
        .def_readonly("arrival_time", &RequestMetrics::arrival_time)
        .def_readonly("first_scheduled_time", &RequestMetrics::first_scheduled_time)
        .def_readonly("first_token_time", &RequestMetrics::first_token_time)
        .def_readonly("last_token_time", &RequestMetrics::last_token_time)
        .def_readonly("finished_time", &RequestMetrics::finished_time)
        .def_readonly("num_prompt_tokens", &RequestMetrics::num_prompt_tokens)
        .def_readonly("num_cached_tokens", &RequestMetrics::num_cached_tokens)
        .def_readonly("num_generation_tokens", &RequestMetrics::num_generation_tokens);

    py::class_<RequestOutput>(m, "RequestOutput")
        .def_readonly("request_id", &RequestOutput::request_id)
        .def_readonly("prompt_token_ids", &RequestOutput::prompt_token_ids)
        .def_readonly("outputs", &RequestOutput::outputs)
        .def_readonly("finished", &RequestOutput::finished)
        .def_readonly("metrics", &RequestOutput::metrics);

    py::class_<CompletionDelta>(m, "CompletionDelta")
        .def_readonly("request_id", &CompletionDelta::request_id)
        .def_readonly("index", &CompletionDelta::index)
        .def_readonly("text", &CompletionDelta::text)
        .def_readonly("token_ids", &CompletionDelta::token_ids)
        .def_readonly("logprobs", &CompletionDelta::logprobs)
        .def_readonly("finished", &CompletionDelta::finished)
        .def_property_readonly(
            "finish_reason",
            [](const CompletionDelta& self) { return finish_reason_to_python(self.finish_reason); })
        .def_readonly("error_message", &CompletionDelta::error_message);
}

}  // namespace lmrun::python
