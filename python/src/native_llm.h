// NativeLLM: what lmrun._lmrun.LLM is. It owns the engine (through the C++ LLM API) and runs
// it with the GIL released: generate() loops over engine steps in C++, taking the GIL back
// only between steps to look for signals (Ctrl-C raises KeyboardInterrupt and aborts the
// batch, leaving the engine usable) and to report progress when requests finish. The
// step-by-step API (add_request / step / abort_request) collects each request's streamed
// deltas between steps. One thread at a time drives the engine; a mutex serializes callers.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <pybind11/pybind11.h>

#include "engine/llm.h"

namespace lmrun::python {

// What one step() of the step-by-step API produced.
struct StepUpdate {
    std::string request_id;
    std::vector<CompletionDelta> deltas;  // in the order the engine reported them
    bool finished = false;
    RequestOutput final_output;  // when finished
};

class NativeLLM {
  public:
    explicit NativeLLM(const EngineConfig& config);

    // Runs every prompt to completion; outputs in prompt order. on_progress (None or a
    // callable(done, prompt_tokens, generation_tokens)) is called when requests finish.
    std::vector<RequestOutput> generate(const std::vector<Prompt>& prompts,
                                        const std::vector<SamplingParams>& params, bool add_special_tokens,
                                        const pybind11::object& on_progress);

    std::vector<int32_t> encode(const std::string& text, bool add_special_tokens) const;
    std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
    // Renders messages (JSON text) with the model's chat template, or with template_source when
    // it is not empty; extra_kwargs_json is a JSON object of template variables.
    std::string render_chat(const std::string& messages_json, bool add_generation_prompt,
                            const std::string& template_source, const std::string& extra_kwargs_json) const;

    // Returns the prompt's token ids.
    std::vector<int32_t> add_request(const std::string& request_id, const Prompt& prompt,
                                     const SamplingParams& params, bool add_special_tokens);
    bool abort_request(const std::string& request_id);
    std::vector<StepUpdate> step();
    bool has_unfinished_requests() const;

    const Tokenizer* tokenizer() const;
    const ModelConfig& model_config() const { return llm().engine().model_config(); }
    int64_t max_model_len() const { return llm().engine().max_model_len(); }
    // Frees the weights and the KV cache now (del does the same once nothing refers to it).
    void shutdown();

  private:
    LLM& llm() const;
    std::vector<int32_t> encode_for_engine(const Prompt& prompt, bool add_special_tokens) const;
    void abort_all(const std::vector<std::string>& request_ids);

    std::unique_ptr<LLM> llm_;
    mutable std::mutex mutex_;  // one thread drives the engine at a time
    int64_t next_batch_ = 0;
    // Step-by-step API: deltas since the last step() and finished outputs that a generate()
    // call stepped past (the engine is shared), keyed by request id.
    std::unordered_map<std::string, std::vector<CompletionDelta>> pending_deltas_;
    std::vector<std::string> pending_order_;
    std::unordered_map<std::string, RequestOutput> finished_elsewhere_;
};

}  // namespace lmrun::python
