// lmrun: LLM inference and serving on the CPU.
//   lmrun generate --model DIR --prompt "..."     offline generation
//   lmrun chat --model DIR                        interactive chat
//   lmrun bench --model DIR                       prefill / decode throughput
//   lmrun serve --model DIR                       OpenAI-compatible HTTP server
//   lmrun perplexity --model DIR --text FILE      perplexity of a text (quantization quality)
//   lmrun router --worker URL ...                 one endpoint over many servers
// Exit codes (cli/exit_codes.h, documented in the README): 0 success, 1 bad input or
// usage, 2 model/checkpoint/tokenizer/template problem, 3 not enough resources, 4 run-time failure.
#include <cstdio>
#include <map>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"

int main(int argc, char** argv) {
    CLI::App app{"lmrun: LLM inference and serving engine for the CPU"};
    app.require_subcommand(1);
    std::map<std::string, lmrun::cli::CommandRunner> commands;
    commands["generate"] = lmrun::cli::add_generate_command(app);
    commands["chat"] = lmrun::cli::add_chat_command(app);
    commands["bench"] = lmrun::cli::add_bench_command(app);
    commands["serve"] = lmrun::cli::add_serve_command(app);
    commands["perplexity"] = lmrun::cli::add_perplexity_command(app);
    commands["router"] = lmrun::cli::add_router_command(app);
    if (std::optional<int> exit_code = lmrun::cli::parse_command_line(app, argc, argv)) return *exit_code;
    for (auto& [name, run] : commands) {
        if (app.got_subcommand(name)) return run();
    }
    return lmrun::cli::kExitUsage;
}
