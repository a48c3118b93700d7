#include "native_llm.h"

#include "errors.h"
#include "sampling_conversion.h"

namespace py = pybind11;

namespace lmrun::python {
namespace {

Error with_prompt_index(size_t index, const Error& error) {
    Error out = error;
    out.message = fmt::format("prompt {}: {}", index, error.message);
    return out;
}

// tokenizer_config.json's bos_token / eos_token as the chat template sees them.
std::string special_token_string(const Tokenizer* tokenizer, const char* key) {
    if (!tokenizer) return {};
    const nlohmann::json& config = tokenizer->tokenizer_config();
    if (!config.contains(key)) return {};
    const nlohmann::json& value = config[key];
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string())
        return value["content"].get<std::string>();
    return {};
}

// The error of something the caller passed in (a template string), whatever the engine
// thought of it: InvalidArgument, naming the argument.
template <typename T>
Result<T> as_argument_error(Result<T> result, const char* argument) {
    if (result.ok()) return result;
    Error error = result.error();
    if (error.kind == ErrorKind::Corrupt) error.kind = ErrorKind::InvalidArgument;
    error.message = fmt::format("{}: {}", argument, error.message);
    error.subject = argument;
    return error;
}

nlohmann::ordered_json parse_json_argument(const std::string& text, const char* what) {
    nlohmann::ordered_json value = nlohmann::ordered_json::parse(text, nullptr, false);
    if (value.is_discarded()) throw EngineError(make_error("{} is not valid JSON", what));
    return value;
}

}  // namespace

NativeLLM::NativeLLM(const EngineConfig& config) {
    py::gil_scoped_release release;  // loading reads and converts every weight
    llm_ = value_or_throw(LLM::create(config));
}

LLM& NativeLLM::llm() const {
    if (!llm_) throw EngineError(make_error(ErrorKind::Unavailable, "this LLM was shut down"));
    return *llm_;
}

const Tokenizer* NativeLLM::tokenizer() const {
    return llm().engine().tokenizer();
}

void NativeLLM::shutdown() {
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    llm_.reset();
    pending_deltas_.clear();
    pending_order_.clear();
    finished_elsewhere_.clear();
}

std::vector<int32_t> NativeLLM::encode_for_engine(const Prompt& prompt, bool add_special_tokens) const {
    return value_or_throw(llm().encode_prompt(prompt, add_special_tokens));
}

void NativeLLM::abort_all(const std::vector<std::string>& request_ids) {
    for (const std::string& id : request_ids) llm().engine().abort_request(id);
}

std::vector<RequestOutput> NativeLLM::generate(const std::vector<Prompt>& prompts,
                                               const std::vector<SamplingParams>& params,
                                               bool add_special_tokens, const py::object& on_progress) {
    if (params.size() != prompts.size())
        throw EngineError(make_error("need one SamplingParams per prompt, got {} for {} prompts",
                                     params.size(), prompts.size()));
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    LLMEngine& engine = llm().engine();

    // Every request is checked before anything is queued, so a bad prompt loses no work; should
    // the engine still refuse one, the ones queued before it are withdrawn.
    std::vector<std::vector<int32_t>> encoded(prompts.size());
    std::vector<SamplingParams> resolved(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
        Result<std::vector<int32_t>> ids = llm().encode_prompt(prompts[i], add_special_tokens);
        if (!ids.ok()) throw EngineError(with_prompt_index(i, ids.error()));
        encoded[i] = std::move(ids).value();
        resolved[i] = resolve_max_tokens(params[i], int64_t(encoded[i].size()), engine.max_model_len());
        if (Status valid = engine.validate_request(encoded[i], resolved[i]); !valid.ok())
            throw EngineError(with_prompt_index(i, valid.error()));
    }
    const std::string prefix = "generate-" + std::to_string(next_batch_++) + "-";
    std::vector<std::string> request_ids;
    for (size_t i = 0; i < prompts.size(); ++i) {
        std::string id = prefix + std::to_string(i);
        if (Status added = engine.add_request(id, std::move(encoded[i]), resolved[i]); !added.ok()) {
            abort_all(request_ids);
            throw EngineError(with_prompt_index(i, added.error()));
        }
        request_ids.push_back(std::move(id));
    }

    std::vector<RequestOutput> outputs(prompts.size());
    std::vector<bool> done(prompts.size(), false);
    size_t num_done = 0;
    int64_t prompt_tokens = 0, generation_tokens = 0;
    try {
        while (num_done < prompts.size()) {
            bool progressed = false;
            for (RequestOutput& output : engine.step()) {
                if (output.request_id.rfind(prefix, 0) != 0) {
                    finished_elsewhere_[output.request_id] = std::move(output);
                    continue;
                }
                size_t index = std::stoul(output.request_id.substr(prefix.size()));
                prompt_tokens += output.metrics.num_prompt_tokens;
                for (const CompletionOutput& completion : output.outputs)
                    generation_tokens += int64_t(completion.token_ids.size());
                outputs[index] = std::move(output);
                done[index] = true;
                ++num_done;
                progressed = true;
            }
            // Between steps: Python's signal handlers (Ctrl-C) and the progress bar.
            py::gil_scoped_acquire acquire;
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (progressed && !on_progress.is_none()) on_progress(num_done, prompt_tokens, generation_tokens);
        }
    } catch (...) {
        for (size_t i = 0; i < request_ids.size(); ++i) {
            if (!done[i]) engine.abort_request(request_ids[i]);
        }
        throw;
    }
    return outputs;
}

std::vector<int32_t> NativeLLM::encode(const std::string& text, bool add_special_tokens) const {
    return encode_for_engine(Prompt::from_text(text), add_special_tokens);
}

std::string NativeLLM::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    const Tokenizer* tok = tokenizer();
    if (!tok)
        throw EngineError(make_error("{}: the model has no tokenizer.json; cannot decode",
                                     llm().engine().config().model_dir));
    return tok->decode(ids, skip_special_tokens);
}

std::string NativeLLM::render_chat(const std::string& messages_json, bool add_generation_prompt,
                                   const std::string& template_source,
                                   const std::string& extra_kwargs_json) const {
    const Tokenizer* tok = tokenizer();
    ChatTemplate chat_template;
    if (!template_source.empty()) {
        chat_template =
            value_or_throw(as_argument_error(ChatTemplate::parse(template_source), "chat_template"));
    } else if (tok && tok->tokenizer_config().contains("chat_template")) {
        chat_template = value_or_throw(
            ChatTemplate::from_tokenizer_config(tok->tokenizer_config(), "tokenizer_config.json"));
    } else {
        throw EngineError(make_error("{}: the tokenizer has no chat_template; pass chat_template=...",
                                     llm().engine().config().model_dir));
    }
    ChatTemplateOptions options;
    options.add_generation_prompt = add_generation_prompt;
    options.extra_kwargs = parse_json_argument(extra_kwargs_json, "chat_template_kwargs");
    nlohmann::ordered_json messages = parse_json_argument(messages_json, "messages");
    Result<std::string> rendered = chat_template.apply(
        messages, options, special_token_string(tok, "bos_token"), special_token_string(tok, "eos_token"));
    // A template passed with the call is an argument (ValueError); the model's own is a file (OSError).
    return value_or_throw(template_source.empty() ? std::move(rendered)
                                                  : as_argument_error(std::move(rendered), "chat_template"));
}

std::vector<int32_t> NativeLLM::add_request(const std::string& request_id, const Prompt& prompt,
                                            const SamplingParams& params, bool add_special_tokens) {
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    LLMEngine& engine = llm().engine();
    std::vector<int32_t> ids = encode_for_engine(prompt, add_special_tokens);
    SamplingParams resolved = resolve_max_tokens(params, int64_t(ids.size()), engine.max_model_len());
    // Called from step(), which holds mutex_.
    auto on_delta = [this](const CompletionDelta& delta) {
        auto [entry, inserted] = pending_deltas_.try_emplace(delta.request_id);
        if (inserted) pending_order_.push_back(delta.request_id);
        entry->second.push_back(delta);
    };
    throw_if_error(engine.add_request(request_id, ids, resolved, on_delta));
    return ids;
}

bool NativeLLM::abort_request(const std::string& request_id) {
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    pending_deltas_.erase(request_id);
    finished_elsewhere_.erase(request_id);
    return llm().engine().abort_request(request_id);
}

bool NativeLLM::has_unfinished_requests() const {
    py::gil_scoped_release release;  // never wait for the mutex holding the GIL: generate() needs it
    std::lock_guard lock(mutex_);
    return llm().engine().has_unfinished_requests() || !finished_elsewhere_.empty();
}

std::vector<StepUpdate> NativeLLM::step() {
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    std::vector<RequestOutput> finished = llm().engine().step();
    for (auto& [id, output] : finished_elsewhere_) finished.push_back(std::move(output));
    finished_elsewhere_.clear();

    std::vector<StepUpdate> updates;
    std::unordered_map<std::string, size_t> update_of_request;
    for (const std::string& id : pending_order_) {
        auto entry = pending_deltas_.find(id);
        if (entry == pending_deltas_.end()) continue;  // aborted since
        update_of_request[id] = updates.size();
        updates.push_back(StepUpdate{id, std::move(entry->second), false, {}});
    }
    pending_deltas_.clear();
    pending_order_.clear();
    for (RequestOutput& output : finished) {
        auto found = update_of_request.find(output.request_id);
        if (found == update_of_request.end()) {
            update_of_request[output.request_id] = updates.size();
            updates.push_back(StepUpdate{output.request_id, {}, false, {}});
            found = update_of_request.find(output.request_id);
        }
        StepUpdate& update = updates[found->second];
        update.finished = true;
        update.final_output = std::move(output);
    }
    return updates;
}

}  // namespace lmrun::python
