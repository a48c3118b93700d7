// The lmrun subcommands. Each registers its options on a CLI11 subcommand and
// returns the process exit code when run.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace lmrun::cli {

using CommandRunner = std::function<int()>;

CommandRunner add_generate_command(CLI::App& app);
CommandRunner add_chat_command(CLI::App& app);
CommandRunner add_bench_command(CLI::App& app);
CommandRunner add_serve_command(CLI::App& app);
CommandRunner add_perplexity_command(CLI::App& app);
CommandRunner add_router_command(CLI::App& app);

}  // namespace lmrun::cli
