// lmrun._lmrun: the native half of the `lmrun` Python package. It exposes NativeLLM and the
// engine's output records as read-only objects; python/lmrun turns them into vLLM's classes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "errors.h"
#include "model/packed_cache_directory.h"
#include "native_llm.h"
#include "output_conversion.h"
#include "sampling_conversion.h"

namespace py = pybind11;
using namespace lmrun;
using namespace lmrun::python;

namespace {

// LLM()'s options (python/lmrun/llm.py checked their types and values; the engine checks the
// rest, e.g. that the model's heads divide by tensor_parallel_size).
EngineConfig engine_config(const py::dict& options) {
    EngineConfig config;
    config.model_dir = options["model"].cast<std::string>();
    config.tokenizer_dir = options["tokenizer"].cast<std::string>();
    config.dtype = options["dtype"].cast<std::string>();
    config.seed = options["seed"].cast<uint64_t>();
    config.runner.max_model_len = options["max_model_len"].cast<int64_t>();
    config.runner.max_num_seqs = options["max_num_seqs"].cast<int64_t>();
    config.runner.max_num_batched_tokens = options["max_num_batched_tokens"].cast<int64_t>();
    config.enable_prefix_caching = options["enable_prefix_caching"].cast<bool>();
    config.enable_chunked_prefill = options["enable_chunked_prefill"].cast<bool>();
    config.runner.kv_cache_memory_bytes = options["kv_cache_memory_bytes"].cast<int64_t>();
    config.runner.kv_cache_memory_fraction = options["kv_cache_fraction"].cast<double>();
    config.runner.kv_cache_dtype = options["kv_cache_dtype"].cast<std::string>();
    config.runner.block_size = options["block_size"].cast<int64_t>();
    config.num_threads = options["num_threads"].cast<int>();
    config.quantization = options["quantization"].cast<std::string>();
    config.unquantized_embeddings = options["unquantized_embeddings"].cast<bool>();
    config.packed_cache.dir = packed_cache_dir_from_option(options["packed_cache"].cast<std::string>());
    config.tensor_parallel_size = options["tensor_parallel_size"].cast<int>();
    config.distributed_executor_backend = options["distributed_executor_backend"].cast<std::string>();
    // The mp backend starts ranks 1.. as `worker_executable worker ...`; under Python
    // /proc/self/exe is the interpreter, so llm.py passes the lmrun binary.
    if (std::string worker = options["worker_executable"].cast<std::string>(); !worker.empty())
        config.worker_executable = worker;
    return config;
}

// A prompt from Python: text (str) or token ids (list of int).
Prompt prompt_from_python(const py::handle& prompt) {
    if (py::isinstance<py::str>(prompt)) return Prompt::from_text(prompt.cast<std::string>());
    return Prompt::from_ids(prompt.cast<std::vector<int32_t>>());
}

std::vector<Prompt> prompts_from_python(const py::sequence& prompts) {
    std::vector<Prompt> out;
    out.reserve(prompts.size());
    for (const py::handle& prompt : prompts) out.push_back(prompt_from_python(prompt));
    return out;
}

std::vector<SamplingParams> params_from_python(const py::sequence& params) {
    std::vector<SamplingParams> out;
    out.reserve(params.size());
    for (const py::handle& item : params) out.push_back(sampling_params_from_python(item));
    return out;
}

// SamplingParams.__init__'s range check: the engine's own validate(), message naming the field.
void validate_sampling_params(const py::handle& params) {
    SamplingParams converted = sampling_params_from_python(params);
    if (converted.max_tokens == kMaxTokensToContextEnd) converted.max_tokens = INT64_MAX;
    throw_if_error(converted.validate());
}

}  // namespace

PYBIND11_MODULE(_lmrun, m) {
    m.doc() = "Native core of the lmrun package (use the `lmrun` module, not this one).";
    register_error_translator();
    register_output_classes(m);

    m.def("validate_sampling_params", &validate_sampling_params, py::arg("params"),
          "Raises ValueError naming the first field of a SamplingParams that is out of range.");

    py::class_<StepUpdate>(m, "StepUpdate")
        .def_readonly("request_id", &StepUpdate::request_id)
        .def_readonly("deltas", &StepUpdate::deltas)
        .def_readonly("finished", &StepUpdate::finished)
        .def_readonly("final_output", &StepUpdate::final_output);

    py::class_<NativeLLM>(m, "LLM")
        .def(py::init(
                 [](const py::dict& options) { return std::make_unique<NativeLLM>(engine_config(options)); }),
             py::arg("options"))
        .def(
            "generate",
            [](NativeLLM& self, const py::sequence& prompts, const py::sequence& params,
               bool add_special_tokens, const py::object& on_progress) {
                return self.generate(prompts_from_python(prompts), params_from_python(params),
                                     add_special_tokens, on_progress);
            },
            py::arg("prompts"), py::arg("params"), py::arg("add_special_tokens"), py::arg("on_progress"))
        .def("encode", &NativeLLM::encode, py::arg("text"), py::arg("add_special_tokens"),
             py::call_guard<py::gil_scoped_release>())
        .def("decode", &NativeLLM::decode, py::arg("ids"), py::arg("skip_special_tokens"),
             py::call_guard<py::gil_scoped_release>())
        .def("render_chat", &NativeLLM::render_chat, py::arg("messages_json"),
             py::arg("add_generation_prompt"), py::arg("template_source"), py::arg("extra_kwargs_json"),
             py::call_guard<py::gil_scoped_release>())
        .def(
            "add_request",
            [](NativeLLM& self, const std::string& request_id, const py::handle& prompt,
               const py::handle& params, bool add_special_tokens) {
                return self.add_request(request_id, prompt_from_python(prompt),
                                        sampling_params_from_python(params), add_special_tokens);
            },
            py::arg("request_id"), py::arg("prompt"), py::arg("params"), py::arg("add_special_tokens"))
        .def("abort_request", &NativeLLM::abort_request, py::arg("request_id"))
        .def("step", &NativeLLM::step)
        .def("has_unfinished_requests", &NativeLLM::has_unfinished_requests)
        .def("shutdown", &NativeLLM::shutdown)
        .def_property_readonly("max_model_len", &NativeLLM::max_model_len)
        .def_property_readonly("vocab_size",
                               [](const NativeLLM& self) { return self.model_config().vocab_size; })
        .def_property_readonly("has_tokenizer",
                               [](const NativeLLM& self) { return self.tokenizer() != nullptr; })
        .def_property_readonly("bos_token_id",
                               [](const NativeLLM& self) -> std::optional<int32_t> {
                                   return self.tokenizer() ? self.tokenizer()->bos_token_id() : std::nullopt;
                               })
        .def_property_readonly("eos_token_id", [](const NativeLLM& self) -> std::optional<int32_t> {
            return self.tokenizer() ? self.tokenizer()->eos_token_id() : std::nullopt;
        });
}
