// lmrun: LLM inference and serving on the CPU.
//   lmrun generate --model DIR --prompt "..."     offline generation
//   lmrun chat --model DIR                        interactive chat
//   lmrun bench --model DIR                       prefill / decode throughput
//   lmrun serve --model DIR                       OpenAI-compatible HTTP server
//   lmrun perplexity --model DIR --text FILE      perplexity of a text (quantization quality)
//   lmrun router --worker URL ...                 one endpoint over many servers
// and, not for users, `lmrun worker ...`: a tensor-parallel worker rank that rank 0 started
// (parallel/worker_main.h); under mpirun every rank but 0 serves rank 0 from there too.
// Exit codes (cli/exit_codes.h, documented in the README): 0 success, 1 bad input or
// usage, 2 model/checkpoint/tokenizer/template problem, 3 not enough resources, 4 run-time failure.
#include <cstdio>
#include <map>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "parallel/worker_main.h"

namespace {

int run_lmrun(int argc, char** argv) {
    if (std::optional<int> worker_exit_code = lmrun::parallel::run_worker_if_requested(argc, argv))
        return *worker_exit_code;
    CLI::App app{"lmrun: LLM inference and serving engine for the CPU"};
    app.require_subcommand(1);
    std::map<std::string, lmrun::cli::CommandRunner> commands;
    commands["generate"] = lmrun::cli::add_generate_command(app);
    commands["chat"] = lmrun::cli::add_chat_command(app);
    commands["bench"] = lmrun::cli::add_bench_command(app);
    commands["serve"] = lmrun::cli::add_serve_command(app);
    commands["perplexity"] = lmrun::cli::add_perplexity_command(app);
    commands["router"] = lmrun::cli::add_router_command(app);
    std::vector<std::string> args = lmrun::cli::expand_option_aliases(argc, argv);
    std::vector<char*> expanded_argv;
    expanded_argv.reserve(args.size());
    for (std::string& arg : args) expanded_argv.push_back(arg.data());
    if (std::optional<int> exit_code =
            lmrun::cli::parse_command_line(app, int(expanded_argv.size()), expanded_argv.data()))
        return *exit_code;
    for (auto& [name, run] : commands) {
        if (app.got_subcommand(name)) return run();
    }
    return lmrun::cli::kExitUsage;
}

}  // namespace

// Errors travel as Result values; an exception reaching here is a bug (or the allocator out
// of memory), reported as a run-time failure instead of std::terminate's abort.
int main(int argc, char** argv) {
    try {
        return run_lmrun(argc, argv);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "lmrun: internal error: %s\n", error.what());
    } catch (...) {
        std::fprintf(stderr, "lmrun: internal error: unknown exception\n");
    }
    return lmrun::cli::kExitRuntime;
}
