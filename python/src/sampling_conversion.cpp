#include "sampling_conversion.h"

#include <algorithm>
#include <string>
#include <vector>

#include <pybind11/stl.h>

namespace py = pybind11;

namespace lmrun::python {
namespace {

using structured::StructuredOutputsParams;

// A Python lmrun.StructuredOutputsParams, whose __init__ checked that exactly one constraint is
// set and made `json` a JSON text.
StructuredOutputsParams structured_outputs_from_python(const py::handle& params) {
    if (py::object json = params.attr("json"); !json.is_none())
        return StructuredOutputsParams::json_schema(json.cast<std::string>());
    if (py::object regex = params.attr("regex"); !regex.is_none())
        return StructuredOutputsParams::regex(regex.cast<std::string>());
    if (py::object choice = params.attr("choice"); !choice.is_none())
        return StructuredOutputsParams::choice(choice.cast<std::vector<std::string>>());
    if (py::object grammar = params.attr("grammar"); !grammar.is_none())
        return StructuredOutputsParams::grammar(grammar.cast<std::string>());
    return StructuredOutputsParams::json_object();
}

}  // namespace

SamplingParams sampling_params_from_python(const py::handle& params) {
    SamplingParams out;
    out.n = params.attr("n").cast<int32_t>();
    out.temperature = params.attr("temperature").cast<float>();
    out.top_p = params.attr("top_p").cast<float>();
    out.top_k = params.attr("top_k").cast<int32_t>();
    out.min_p = params.attr("min_p").cast<float>();
    if (py::object seed = params.attr("seed"); !seed.is_none()) out.seed = seed.cast<uint64_t>();
    out.stop = params.attr("stop").cast<std::vector<std::string>>();
    out.stop_token_ids = params.attr("stop_token_ids").cast<std::vector<int32_t>>();
    out.ignore_eos = params.attr("ignore_eos").cast<bool>();
    py::object max_tokens = params.attr("max_tokens");
    out.max_tokens = max_tokens.is_none() ? kMaxTokensToContextEnd : max_tokens.cast<int64_t>();
    out.min_tokens = params.attr("min_tokens").cast<int64_t>();
    if (py::object logprobs = params.attr("logprobs"); !logprobs.is_none())
        out.logprobs = logprobs.cast<int32_t>();
    out.presence_penalty = params.attr("presence_penalty").cast<float>();
    out.frequency_penalty = params.attr("frequency_penalty").cast<float>();
    out.repetition_penalty = params.attr("repetition_penalty").cast<float>();
    out.skip_special_tokens = params.attr("skip_special_tokens").cast<bool>();
    if (py::object structured = py::getattr(params, "structured_outputs", py::none()); !structured.is_none())
        out.structured_outputs = structured_outputs_from_python(structured);
    return out;
}

SamplingParams resolve_max_tokens(SamplingParams params, int64_t prompt_len, int64_t max_model_len) {
    if (params.max_tokens == kMaxTokensToContextEnd) {
        params.max_tokens = std::max<int64_t>(1, max_model_len - prompt_len);
        params.min_tokens = std::min(params.min_tokens, params.max_tokens);
    }
    return params;
}

}  // namespace lmrun::python
