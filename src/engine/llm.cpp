#include "engine/llm.h"

#include <unordered_map>

#include "engine/progress_bar.h"

namespace lmrun {

Result<std::unique_ptr<LLM>> LLM::create(const EngineConfig& config) {
    std::unique_ptr<LLM> llm(new LLM());
    LMRUN_ASSIGN_OR_RETURN(llm->engine_, LLMEngine::create(config));
    const Tokenizer* tokenizer = llm->engine_->tokenizer();
    LMRUN_ASSIGN_OR_RETURN(llm->chat_template_,
                           load_chat_template("", tokenizer ? &tokenizer->tokenizer_config() : nullptr));
    return llm;
}

Result<std::vector<int32_t>> LLM::encode_prompt(const Prompt& prompt, bool add_special_tokens) const {
    if (!prompt.token_ids.empty()) return prompt.token_ids;
    const Tokenizer* tokenizer = engine_->tokenizer();
    if (!tokenizer)
        return with_subject(
            make_error(ErrorKind::NotFound, "{}: the model has no tokenizer.json; give prompts as token ids",
                       engine_->config().model_dir),
            engine_->config().model_dir);
    return tokenizer->encode(prompt.text, add_special_tokens);
}

Result<std::string> LLM::render_chat(const nlohmann::json& messages,
                                     const ChatTemplateOptions& options) const {
    if (!chat_template_) {
        return make_error("{}: the tokenizer has no chat_template; use plain prompts",
                          engine_->config().model_dir);
    }
    const Tokenizer* tokenizer = engine_->tokenizer();
    if (!tokenizer) {
        return make_error("{}: the model has no tokenizer.json, so no chat", engine_->config().model_dir);
    }
    return chat_template_->apply(messages, options, tokenizer->bos_token(), tokenizer->eos_token());
}

Result<std::vector<RequestOutput>> LLM::generate(const std::vector<Prompt>& prompts,
                                                 const SamplingParams& params,
                                                 const GenerateOptions& options) {
    return generate(prompts, std::vector<SamplingParams>(prompts.size(), params), options);
}

Result<std::vector<RequestOutput>> LLM::generate(const std::vector<Prompt>& prompts,
                                                 const std::vector<SamplingParams>& params,
                                                 const GenerateOptions& options) {
    if (params.size() != prompts.size()) return make_error("need one SamplingParams per prompt");
    // Validate everything before queueing anything, so a bad prompt loses no work.
    std::vector<std::vector<int32_t>> encoded;
    for (size_t i = 0; i < prompts.size(); ++i) {
        LMRUN_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                               encode_prompt(prompts[i], options.add_special_tokens));
        if (Status valid = engine_->validate_request(ids, params[i]); !valid.ok()) {
            return make_error("prompt {}: {}", i, valid.error().message);
        }
        encoded.push_back(std::move(ids));
    }
    // Prompt i is served by request_ids[i]; outputs come back in the order requests finish.
    std::vector<std::string> request_ids;
    std::unordered_map<std::string, size_t> prompt_of_request;
    for (size_t i = 0; i < prompts.size(); ++i) {
        request_ids.push_back("offline-" + std::to_string(next_request_id_++));
        prompt_of_request[request_ids.back()] = i;
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
        if (Status added = engine_->add_request(request_ids[i], std::move(encoded[i]), params[i]);
            !added.ok()) {
            for (size_t j = 0; j < i; ++j) engine_->abort_request(request_ids[j]);
            return make_error("prompt {}: {}", i, added.error().message);
        }
    }
    std::vector<RequestOutput> outputs(prompts.size());
    ProgressBar progress("Processed prompts", int64_t(prompts.size()), options.show_progress);
    int64_t done = 0, prompt_tokens = 0, generation_tokens = 0;
    while (engine_->has_unfinished_requests()) {
        for (RequestOutput& output : engine_->step()) {
            auto found = prompt_of_request.find(output.request_id);
            if (found == prompt_of_request.end()) continue;  // not one of these prompts
            const size_t index = found->second;
            prompt_tokens += output.metrics.num_prompt_tokens;
            for (const auto& completion : output.outputs)
                generation_tokens += int64_t(completion.token_ids.size());
            outputs[index] = std::move(output);
            ++done;
        }
        progress.update(done, prompt_tokens, generation_tokens);
    }
    progress.finish();
    return outputs;
}

Result<std::vector<RequestOutput>> LLM::chat(const std::vector<nlohmann::json>& conversations,
                                             const SamplingParams& params,
                                             const ChatTemplateOptions& template_options,
                                             const GenerateOptions& options) {
    std::vector<Prompt> prompts;
    for (const nlohmann::json& messages : conversations) {
        LMRUN_ASSIGN_OR_RETURN(std::string rendered, render_chat(messages, template_options));
        prompts.push_back(Prompt::from_text(std::move(rendered)));
    }
    GenerateOptions chat_options = options;
    chat_options.add_special_tokens = false;  // the template already wrote any BOS
    return generate(prompts, params, chat_options);
}

}  // namespace lmrun
