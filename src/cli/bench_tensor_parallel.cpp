#include "cli/bench_tensor_parallel.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "cli/bench_statistics.h"
#include "cli/bench_workloads.h"
#include "core/logging.h"
#include "core/memory_info.h"
#include "parallel/executor.h"

namespace lmrun::cli {
namespace {

// "VmRSS" of /proc/PID/status in bytes.
int64_t status_bytes(pid_t pid, const std::string& key) {
    std::ifstream in(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
    }
    return 0;
}

struct RankMemory {
    int rank = 0;
    int64_t rss = 0, peak_rss = 0, shared_memory = 0;
};

std::vector<RankMemory> rank_memory(const parallel::Executor& executor) {
    std::vector<pid_t> pids = {getpid()};
    for (pid_t pid : executor.worker_pids()) pids.push_back(pid);
    std::vector<RankMemory> ranks;
    for (size_t r = 0; r < pids.size(); ++r) {
        ranks.push_back({int(r), status_bytes(pids[r], "VmRSS"), status_bytes(pids[r], "VmHWM"),
                         status_bytes(pids[r], "RssShmem")});
    }
    return ranks;
}

using Timings = std::map<std::string, std::vector<double>>;  // workload -> tokens/s of each run

Result<std::vector<RankMemory>> run_side(const TensorParallelComparison& comparison, int tensor_parallel_size,
                                         Timings& timings) {
    parallel::ExecutorConfig config;
    config.model_dir = comparison.model_dir;
    config.dtype = comparison.dtype;
    config.runner = comparison.runner;
    config.tensor_parallel_size = tensor_parallel_size;
    LMRUN_ASSIGN_OR_RETURN(config.backend,
                           parallel::resolve_executor_backend(
                               tensor_parallel_size == 1 ? "" : comparison.backend, tensor_parallel_size));
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<parallel::Executor> executor, parallel::Executor::create(config));
    ModelRunner& runner = executor->runner();
    for (int64_t length : comparison.prompt_lens) {
        StepTiming timing = time_prefill(runner, length);
        timings[fmt::format("prefill {}", length)].push_back(double(length) / timing.seconds);
    }
    for (int64_t batch : comparison.decode_batches) {
        std::vector<StepTiming> steps =
            time_decode_steps(runner, batch, comparison.decode_context, comparison.decode_steps, 1);
        timings[fmt::format("decode batch {}", batch)].push_back(double(batch) / steps[0].seconds);
    }
    LMRUN_RETURN_IF_ERROR(executor->health());
    return rank_memory(*executor);
}

}  // namespace

Result<nlohmann::json> compare_tensor_parallel(const TensorParallelComparison& comparison) {
    const int n = comparison.tensor_parallel_size;
    Timings one, split;
    std::vector<RankMemory> memory;
    for (int64_t run = 0; run < comparison.runs; ++run) {
        log_info("tensor-parallel comparison: run {} of {}", run + 1, comparison.runs);
        reset_peak_resident_memory();
        auto single = run_side(comparison, 1, one);
        if (!single.ok()) return single.error();
        reset_peak_resident_memory();
        LMRUN_ASSIGN_OR_RETURN(memory, run_side(comparison, n, split));
    }
    std::cout << fmt::format("\n{:<20} {:>14} {:>14} {:>8}   (medians of {} alternating runs)\n", "workload",
                             "-tp 1 tok/s", fmt::format("-tp {} tok/s", n), "ratio", comparison.runs);
    nlohmann::json rows = nlohmann::json::array();
    auto print_row = [&](const std::string& name) {
        const double a = median(one[name]), b = median(split[name]);
        auto spread = [](const std::vector<double>& v) {
            return fmt::format("{:.0f}-{:.0f}", *std::min_element(v.begin(), v.end()),
                               *std::max_element(v.begin(), v.end()));
        };
        std::cout << fmt::format("{:<20} {:>14.1f} {:>14.1f} {:>7.2f}x   runs {} / {}\n", name, a, b, b / a,
                                 spread(one[name]), spread(split[name]));
        rows.push_back({{"workload", name},
                        {"tp1_tokens_per_s", one[name]},
                        {"tpn_tokens_per_s", split[name]},
                        {"ratio_of_medians", b / a}});
    };
    for (int64_t length : comparison.prompt_lens) print_row(fmt::format("prefill {}", length));
    for (int64_t batch : comparison.decode_batches) print_row(fmt::format("decode batch {}", batch));
    nlohmann::json ranks = nlohmann::json::array();
    const double mib = double(1 << 20);
    for (const RankMemory& rank : memory) {
        std::cout << fmt::format(
            "rank {}: resident {:.0f} MiB (peak {:.0f} MiB, shared-memory segment {:.0f} MiB)\n", rank.rank,
            double(rank.rss) / mib, double(rank.peak_rss) / mib, double(rank.shared_memory) / mib);
        ranks.push_back({{"rank", rank.rank},
                         {"rss_bytes", rank.rss},
                         {"peak_rss_bytes", rank.peak_rss},
                         {"shared_memory_bytes", rank.shared_memory}});
    }
    return nlohmann::json{{"tensor_parallel_size", n}, {"workloads", rows}, {"ranks", ranks}};
}

}  // namespace lmrun::cli
