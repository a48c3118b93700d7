// lmrun generate: offline generation for one prompt, a list of token ids, or a
// JSONL file of prompts, printing completions as text (or JSON lines).
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "core/json_io.h"
#include "core/logging.h"
#include "engine/llm.h"

namespace lmrun::cli {
namespace {

struct GenerateArgs {
    EngineOptions engine;
    SamplingOptions sampling;
    std::vector<std::string> prompts;
    std::string prompt_ids;
    std::string prompts_file;
    bool json_output = false;
    bool no_progress = false;
};

// JSONL lines: {"prompt": "text"} or {"prompt_ids": [1, 2, 3]}.
Result<std::vector<Prompt>> read_prompts_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return make_error("{}: cannot open prompts file", path);
    std::vector<Prompt> prompts;
    std::string line;
    for (int line_number = 1; std::getline(in, line); ++line_number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = fmt::format("{}:{}", path, line_number);
        Result<nlohmann::json> parsed = parse_json(line, where, JsonLimits{16, size_t(64) << 20});
        if (!parsed.ok()) return Error{parsed.error().message, ErrorKind::InvalidArgument, path};
        const nlohmann::json& record = parsed.value();
        if (!record.is_object()) return make_error("{}: not a JSON object", where);
        if (record.contains("prompt") && record["prompt"].is_string()) {
            prompts.push_back(Prompt::from_text(record["prompt"]));
        } else if (record.contains("prompt_ids") && record["prompt_ids"].is_array()) {
            std::vector<int32_t> ids;
            for (const auto& id : record["prompt_ids"]) {
                // Checked as 64-bit: get<int32_t>() would wrap 4294967297 to a valid id.
                if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX ||
                    (id.is_number_unsigned() && id.get<uint64_t>() > uint64_t(INT32_MAX)))
                    return make_error("{}: prompt_ids must be non-negative 32-bit integers, got {}", where,
                                      id.dump());
                ids.push_back(int32_t(id.get<int64_t>()));
            }
            prompts.push_back(Prompt::from_ids(std::move(ids)));
        } else {
            return make_error("{}: needs a \"prompt\" string or a \"prompt_ids\" array", where);
        }
    }
    return prompts;
}

Result<std::vector<Prompt>> collect_prompts(const GenerateArgs& args) {
    std::vector<Prompt> prompts;
    prompts.reserve(args.prompts.size() + 1);
    for (const std::string& text : args.prompts) prompts.push_back(Prompt::from_text(text));
    if (!args.prompt_ids.empty()) {
        LMRUN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, parse_id_list(args.prompt_ids, "--prompt-ids"));
        prompts.push_back(Prompt::from_ids(std::move(ids)));
    }
    if (!args.prompts_file.empty()) {
        LMRUN_ASSIGN_OR_RETURN(std::vector<Prompt> from_file, read_prompts_file(args.prompts_file));
        prompts.insert(prompts.end(), from_file.begin(), from_file.end());
    }
    if (prompts.empty()) return make_error("give a prompt: --prompt, --prompt-ids or --prompts-file");
    return prompts;
}

// --logprobs N: per token {"token_id", "logprob", "top": [[id, logprob], ...]} (best first).
nlohmann::json logprobs_json(const std::vector<TokenLogprob>& logprobs) {
    nlohmann::json tokens = nlohmann::json::array();
    for (const TokenLogprob& token : logprobs) {
        nlohmann::json top = nlohmann::json::array();
        for (const auto& [id, logprob] : token.top) top.push_back({id, logprob});
        tokens.push_back({{"token_id", token.token_id}, {"logprob", token.logprob}, {"top", top}});
    }
    return tokens;
}

void print_output(const RequestOutput& output, bool json_output, bool several) {
    for (const CompletionOutput& completion : output.outputs) {
        if (json_output) {
            nlohmann::json record = {
                {"request_id", output.request_id},
                {"index", completion.index},
                {"text", completion.text},
                {"token_ids", completion.token_ids},
                {"finish_reason", to_string(completion.finish_reason)},
                {"num_prompt_tokens", output.metrics.num_prompt_tokens},
                {"time_to_first_token_s", output.metrics.first_token_time - output.metrics.arrival_time},
                {"total_time_s", output.metrics.finished_time - output.metrics.arrival_time}};
            if (!completion.error_message.empty()) record["error"] = completion.error_message;
            if (!completion.logprobs.empty()) record["logprobs"] = logprobs_json(completion.logprobs);
            std::cout << record.dump() << "\n";
            continue;
        }
        if (several || output.outputs.size() > 1) {
            std::cout << "--- " << output.request_id << " [" << completion.index << "] ("
                      << to_string(completion.finish_reason) << ")\n";
        }
        if (!completion.error_message.empty()) std::cout << "error: " << completion.error_message << "\n";
        std::cout << completion.text << "\n";
    }
}

int run_generate(const GenerateArgs& args) {
    auto prompts = collect_prompts(args);
    if (!prompts.ok()) return fail(prompts.error());
    auto params = args.sampling.to_params();
    if (!params.ok()) return fail(params.error());
    auto llm = LLM::create(args.engine.to_config());
    if (!llm.ok()) return fail(llm.error());
    GenerateOptions options;
    options.show_progress = !args.no_progress;
    auto outputs = llm.value()->generate(prompts.value(), params.value(), options);
    if (!outputs.ok()) return fail(outputs.error());
    for (const RequestOutput& output : outputs.value())
        print_output(output, args.json_output, outputs->size() > 1);
    return kExitOk;
}

}  // namespace

CommandRunner add_generate_command(CLI::App& app) {
    auto args = std::make_shared<GenerateArgs>();
    CLI::App* command = app.add_subcommand("generate", "Generate completions offline");
    args->engine.add_to(*command);
    args->sampling.add_to(*command);
    command->add_option("--prompt", args->prompts, "Prompt text (repeatable)");
    command->add_option("--prompt-ids", args->prompt_ids, "Prompt as comma-separated token ids");
    command->add_option("--prompts-file", args->prompts_file,
                        "JSONL file: {\"prompt\": ...} or {\"prompt_ids\": [...]}");
    command->add_flag("--json", args->json_output, "Print one JSON object per completion");
    command->add_flag("--no-progress", args->no_progress, "Hide the progress bar");
    return [args] { return run_generate(*args); };
}

}  // namespace lmrun::cli
