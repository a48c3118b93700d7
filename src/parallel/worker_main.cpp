#include "parallel/worker_main.h"

#include <unistd.h>

#include <charconv>
#include <cstring>

#include "core/logging.h"
#include "parallel/mpi_worker.h"
#include "parallel/rank_startup.h"
#include "parallel/shm_process_group.h"

namespace lmrun::parallel {
namespace {

struct MpWorkerArgs {
    int rank = -1;
    int size = 0;
    int group_fd = -1;
    long parent_pid = 0;
};

bool parse_int(const char* text, long& value) {
    const char* end = text + std::strlen(text);
    auto [ptr, error] = std::from_chars(text, end, value);
    return error == std::errc() && ptr == end;
}

std::optional<MpWorkerArgs> parse_mp_worker_args(int argc, char** argv) {
    MpWorkerArgs args;
    for (int i = 2; i + 1 < argc; i += 2) {
        long value = 0;
        if (!parse_int(argv[i + 1], value)) return std::nullopt;
        if (std::strcmp(argv[i], "--rank") == 0)
            args.rank = int(value);
        else if (std::strcmp(argv[i], "--size") == 0)
            args.size = int(value);
        else if (std::strcmp(argv[i], "--group-fd") == 0)
            args.group_fd = int(value);
        else if (std::strcmp(argv[i], "--parent") == 0)
            args.parent_pid = value;
        else
            return std::nullopt;
    }
    if (args.rank < 1 || args.rank >= args.size || args.group_fd < 0 || args.parent_pid <= 0)
        return std::nullopt;
    return args;
}

// Logs of a worker say which rank wrote them; only warnings and errors unless asked for more.
void set_up_worker_logging(int rank) {
    set_log_tag("rank " + std::to_string(rank));
    if (!std::getenv("LMRUN_LOG_LEVEL")) set_log_level(LogLevel::Warn);
}

int run_mp_worker(int argc, char** argv) {
    std::optional<MpWorkerArgs> args = parse_mp_worker_args(argc, argv);
    if (!args) {
        log_error("usage: {} worker --rank R --size N --group-fd FD --parent PID (started by lmrun itself)",
                  argv[0]);
        return 2;
    }
    set_up_worker_logging(args->rank);
    auto group = ShmProcessGroup::attach(args->group_fd, args->rank, pid_t(args->parent_pid));
    if (!group.ok()) return log_error("{}", group.error().message), 1;
    std::span<const std::byte> message = group.value()->broadcast({});
    if (group.value()->failed()) return 1;
    auto config = worker_config_from_json(
        std::string_view(reinterpret_cast<const char*>(message.data()), message.size()));
    if (!config.ok()) return log_error("{}", config.error().message), 1;
    (void)apply_placement(config->placements.at(size_t(args->rank)));
    auto runner = start_rank(*group.value(), config.value());
    if (!runner.ok()) {
        // Rank 0 reports it (the verdict names the failing rank); exit when it says so, so that
        // the exit is not mistaken for a crash.
        group.value()->broadcast({});
        return 1;
    }
    while (runner.value()->run_worker_step()) {
    }
    return group.value()->failed() ? 1 : 0;
}

}  // namespace

std::vector<std::string> worker_arguments(const std::string& executable, int rank, int size, int group_fd,
                                          pid_t parent_pid) {
    return {executable,   "worker",
            "--rank",     std::to_string(rank),
            "--size",     std::to_string(size),
            "--group-fd", std::to_string(group_fd),
            "--parent",   std::to_string(parent_pid)};
}

std::optional<int> run_worker_if_requested(int argc, char** argv) {
    if (argc >= 2 && std::strcmp(argv[1], "worker") == 0) return run_mp_worker(argc, argv);
    return run_mpi_worker_if_launched();
}

}  // namespace lmrun::parallel
