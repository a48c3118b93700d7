// lmrun chat: an interactive conversation on the terminal. Each user line is
// appended to the history, rendered with the model's chat template and
// answered with tokens streamed as they are generated.
// Commands: /reset clears the history, /exit (or end of input) quits.
#include <iostream>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "core/logging.h"
#include "engine/llm.h"

namespace lmrun::cli {
namespace {

// For models that ship no chat template: the conversation as plain lines.
constexpr const char* kPlainTemplate = "{% for message in messages %}{{ message['content'] }}\n{% endfor %}";

struct ChatArgs {
    EngineOptions engine;
    SamplingOptions sampling;
    std::string system_prompt;
    std::string chat_template_file;
    bool disable_thinking = false;
};

// The template from --chat-template, else the tokenizer's (loaded by the LLM); plain turns when
// neither has one. A chat needs a tokenizer: without one there is nothing to type.
Status prepare_chat(LLM& llm, const ChatArgs& args) {
    if (llm.engine().tokenizer() == nullptr) {
        const std::string dir = args.engine.tokenizer.empty() ? args.engine.model : args.engine.tokenizer;
        return with_subject(
            make_error(ErrorKind::NotFound,
                       "{}: no tokenizer.json; lmrun chat needs a tokenizer (pass --tokenizer DIR)", dir),
            dir);
    }
    LMRUN_ASSIGN_OR_RETURN(std::optional<ChatTemplate> from_file,
                           load_chat_template(args.chat_template_file, nullptr));
    if (from_file) {
        llm.set_chat_template(std::move(*from_file));
    } else if (!llm.has_chat_template()) {
        log_warn("the tokenizer has no chat_template; using plain text turns (pass --chat-template FILE)");
        LMRUN_ASSIGN_OR_RETURN(ChatTemplate plain, ChatTemplate::parse(kPlainTemplate));
        llm.set_chat_template(std::move(plain));
    }
    return ok_status();
}

// Streams one assistant reply; returns its full text.
Result<std::string> answer(LLM& llm, const nlohmann::json& messages, const ChatArgs& args,
                           const SamplingParams& params, int64_t turn) {
    ChatTemplateOptions options;
    options.add_generation_prompt = true;
    if (args.disable_thinking) options.extra_kwargs["enable_thinking"] = false;
    LMRUN_ASSIGN_OR_RETURN(std::string rendered, llm.render_chat(messages, options));
    LMRUN_ASSIGN_OR_RETURN(std::vector<int32_t> ids, llm.encode_prompt(Prompt::from_text(rendered), false));
    std::string reply;
    std::string error;
    LLMEngine& engine = llm.engine();
    LMRUN_RETURN_IF_ERROR(engine.add_request("chat-" + std::to_string(turn), std::move(ids), params,
                                             [&](const CompletionDelta& delta) {
                                                 std::cout << delta.text << std::flush;
                                                 reply += delta.text;
                                                 if (!delta.error_message.empty())
                                                     error = delta.error_message;
                                             }));
    while (engine.has_unfinished_requests()) engine.step();
    std::cout << "\n";
    if (!error.empty()) return make_error("{}", error);
    return reply;
}

int run_chat(const ChatArgs& args) {
    auto params = args.sampling.to_params();
    if (!params.ok()) return fail(params.error());
    auto llm = LLM::create(args.engine.to_config());
    if (!llm.ok()) return fail(llm.error());
    if (Status prepared = prepare_chat(**llm, args); !prepared.ok()) return fail(prepared.error());
    nlohmann::json messages = nlohmann::json::array();
    if (!args.system_prompt.empty())
        messages.push_back({{"role", "system"}, {"content", args.system_prompt}});
    const size_t base_size = messages.size();
    std::cout << "lmrun chat: type a message; /reset clears the history, /exit quits." << std::endl;
    std::string line;
    for (int64_t turn = 0;; ++turn) {
        std::cout << "> " << std::flush;
        if (!std::getline(std::cin, line) || line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
            messages.erase(messages.begin() + int64_t(base_size), messages.end());
            std::cout << "(history cleared)" << std::endl;
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        auto reply = answer(**llm, messages, args, params.value(), turn);
        if (!reply.ok()) {
            log_error("{}", reply.error().message);
            messages.erase(messages.end() - 1);
            continue;
        }
        messages.push_back({{"role", "assistant"}, {"content", reply.value()}});
    }
    return kExitOk;
}

}  // namespace

CommandRunner add_chat_command(CLI::App& app) {
    auto args = std::make_shared<ChatArgs>();
    CLI::App* command = app.add_subcommand("chat", "Chat interactively, streaming the replies");
    args->engine.add_to(*command);
    args->sampling.add_to(*command);
    command->add_option("--system", args->system_prompt, "System prompt");
    command->add_option("--chat-template", args->chat_template_file, "Jinja chat template file");
    command->add_flag("--no-thinking", args->disable_thinking,
                      "Pass enable_thinking=false to the template (Qwen3)");
    return [args] { return run_chat(*args); };
}

}  // namespace lmrun::cli
