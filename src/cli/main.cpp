// lmrun: LLM inference and serving on the CPU.
//   lmrun generate --model DIR --prompt "..."     offline generation
//   lmrun chat --model DIR                        interactive chat
//   lmrun bench --model DIR                       prefill / decode throughput
//   lmrun serve --model DIR                       OpenAI-compatible HTTP server
//   lmrun perplexity --model DIR --text FILE      perplexity of a text (quantization quality)
#include <cstdio>
#include <map>

#include "cli/commands.h"

int main(int argc, char** argv) {
    CLI::App app{"lmrun: LLM inference and serving engine for the CPU"};
    app.require_subcommand(1);
    std::map<std::string, lmrun::cli::CommandRunner> commands;
    commands["generate"] = lmrun::cli::add_generate_command(app);
    commands["chat"] = lmrun::cli::add_chat_command(app);
    commands["bench"] = lmrun::cli::add_bench_command(app);
    commands["serve"] = lmrun::cli::add_serve_command(app);
    commands["perplexity"] = lmrun::cli::add_perplexity_command(app);
    CLI11_PARSE(app, argc, argv);
    for (auto& [name, run] : commands) {
        if (app.got_subcommand(name)) return run();
    }
    return 1;
}
