#include "cli/bench_startup.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "cli/cli_options.h"
#include "core/logging.h"
#include "core/memory_info.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "engine/llm_engine.h"
#include "model/packed_cache_directory.h"

extern char** environ;

namespace lmrun::cli {
namespace {

constexpr double kMiB = double(1 << 20);

std::vector<std::string> checkpoint_files(const std::string& model_dir) {
    std::vector<std::string> files;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(model_dir, error)) {
        if (entry.is_regular_file()) files.push_back(entry.path().string());
    }
    return files;
}

// Fraction of the checkpoint's bytes in the page cache now (mincore on a fresh mapping).
double cached_fraction(const std::vector<std::string>& files) {
    int64_t cached = 0, total = 0;
    const int64_t page = sysconf(_SC_PAGESIZE);
    for (const std::string& path : files) {
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        const off_t size = lseek(fd, 0, SEEK_END);
        void* mapped = size > 0 ? mmap(nullptr, size_t(size), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (mapped != MAP_FAILED) {
            std::vector<unsigned char> pages(size_t((size + page - 1) / page));
            if (mincore(mapped, size_t(size), pages.data()) == 0) {
                for (unsigned char flags : pages) cached += (flags & 1) * page;
                total += int64_t(pages.size()) * page;
            }
            munmap(mapped, size_t(size));
        }
        close(fd);
    }
    return total > 0 ? double(cached) / double(total) : 0.0;
}

// Reads every file once, so that a warm run finds the checkpoint in the page cache.
void read_into_page_cache(const std::vector<std::string>& files) {
    std::vector<char> buffer(size_t(8) << 20);
    for (const std::string& path : files) {
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        while (read(fd, buffer.data(), buffer.size()) > 0) {
        }
        close(fd);
    }
}

// Drops only this checkpoint's pages (other processes keep their cache, unlike drop_caches).
void drop_from_page_cache(const std::vector<std::string>& files) {
    for (const std::string& path : files) {
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        fdatasync(fd);  // dirty pages (a packed cache file just written) are not dropped
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

// nlohmann::json's noexcept move calls its invariant check, which clang-tidy takes for a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ProbeResult {
    bool ok = false;
    double wall_first_token_s = 0;  // parent's clock: spawn to the probe's report
    double wall_exit_s = 0;         // and to its exit (a first start writes the packed cache before)
    nlohmann::json report;          // the probe's own figures
};

// How a start finds the packed weight cache.
enum class PackedCacheMode { None, First, Later };

const char* mode_name(PackedCacheMode mode) {
    switch (mode) {
        case PackedCacheMode::None:
            return "no packed cache";
        case PackedCacheMode::First:
            return "first start";
        case PackedCacheMode::Later:
            return "later start";
    }
    return "";
}

// Spawns `lmrun bench --startup-probe N --packed-cache <packed_cache> ...` and waits for its one
// JSON line, then for its exit.
ProbeResult spawn_probe(const StartupBenchOptions& options, int64_t prompt_len,
                        const std::string& packed_cache) {
    std::vector<std::string> args = {
        "lmrun",          "bench",       "--model",         options.model_dir,
        "--dtype",        options.dtype, "--startup-probe", std::to_string(prompt_len),
        "--packed-cache", packed_cache};
    if (options.threads > 0) args.insert(args.end(), {"--threads", std::to_string(options.threads)});
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);

    ProbeResult result;
    int out[2];
    if (pipe(out) != 0) return result;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    Stopwatch clock;
    pid_t pid = 0;
    int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (spawned != 0) {
        close(out[0]);
        return result;
    }
    std::string line;
    char c = 0;
    while (read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    result.wall_first_token_s = clock.elapsed_seconds();
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    result.wall_exit_s = clock.elapsed_seconds();
    result.report = nlohmann::json::parse(line, nullptr, false);
    result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && result.report.is_object();
    return result;
}

struct Scenario {
    bool cold = false;
    int64_t prompt_len = 0;
    PackedCacheMode mode = PackedCacheMode::None;
    std::string packed_cache_dir;  // of the later starts (First: a fresh one next to it per run)
};

// What a probe of the scenario is given as --packed-cache (a First start's fresh directory is
// made here and removed by the caller).
std::string packed_cache_argument(const Scenario& scenario) {
    if (scenario.mode == PackedCacheMode::None) return "none";
    if (scenario.mode == PackedCacheMode::Later) return scenario.packed_cache_dir;
    std::error_code error;
    std::filesystem::path parent = std::filesystem::path(scenario.packed_cache_dir).parent_path();
    std::filesystem::create_directories(parent, error);
    std::string pattern = (parent / "bench-first-start-XXXXXX").string();
    return mkdtemp(pattern.data()) ? pattern : "none";
}

// Median (by first-token time) of `repeats` fresh processes; nullopt-like ok=false on failure.
ProbeResult measure(const StartupBenchOptions& options, const Scenario& scenario,
                    const std::vector<std::string>& files, double& cached_before) {
    std::vector<ProbeResult> runs;
    cached_before = 0;
    for (int64_t r = 0; r < options.repeats; ++r) {
        if (scenario.cold) {
            drop_from_page_cache(files);
        } else {
            read_into_page_cache(files);
        }
        cached_before = std::max(cached_before, cached_fraction(files));
        const std::string packed_cache = packed_cache_argument(scenario);
        ProbeResult run = spawn_probe(options, scenario.prompt_len, packed_cache);
        if (scenario.mode == PackedCacheMode::First) {
            std::error_code error;
            std::filesystem::remove_all(packed_cache, error);
        }
        if (!run.ok) return run;
        runs.push_back(std::move(run));
    }
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.wall_first_token_s < b.wall_first_token_s; });
    return runs[runs.size() / 2];
}

// Measures one scenario, prints its row and appends it to `rows`; false when a probe failed.
bool measure_scenario(const StartupBenchOptions& options, const Scenario& scenario,
                      const std::vector<std::string>& files, nlohmann::json& rows) {
    double cached = 0;
    ProbeResult run = measure(options, scenario, files, cached);
    const std::string name = fmt::format("{}, {} cache, {} tok", mode_name(scenario.mode),
                                         scenario.cold ? "cold" : "warm", scenario.prompt_len);
    if (!run.ok) {
        std::cout << fmt::format(
            "{:<36} probe failed (run `lmrun bench --model {} --startup-probe {} "
            "--packed-cache {}`)\n",
            name, options.model_dir, scenario.prompt_len,
            scenario.mode == PackedCacheMode::None ? "none" : scenario.packed_cache_dir);
        return false;
    }
    if (scenario.cold && cached > 0.1) {
        std::cout << fmt::format("{:<36} not measurable: {:.0f}% of the files stayed cached\n", name,
                                 100 * cached);
        return true;
    }
    const nlohmann::json& r = run.report;
    const double weights = r["weight_bytes"].get<double>();
    const double peak = r["peak_rss_bytes"].get<double>();
    const double target_s = scenario.cold ? 3.0 : 1.0;
    const bool time_met = run.wall_first_token_s < target_s;
    const bool memory_met = peak <= weights + 300 * kMiB;
    std::cout << fmt::format(
        "{:<36} {:>7} {:>7.2f} {:>8.2f} {:>9.2f} {:>7.2f} {:>10.0f} {:>12.1f}   first token < {:.0f} s {}, "
        "peak <= weights {:.0f} + 300 MiB {}\n",
        name, r["threads"].get<int>(), r["load_s"].get<double>(), r["ready_s"].get<double>(),
        run.wall_first_token_s, run.wall_exit_s, peak / kMiB, r["kv_resident_bytes"].get<double>() / kMiB,
        target_s, time_met ? "met" : "MISSED", weights / kMiB, memory_met ? "met" : "MISSED");
    nlohmann::json row = r;
    row["scenario"] = name;
    row["page_cache"] = scenario.cold ? "cold" : "warm";
    row["prompt_tokens"] = scenario.prompt_len;
    row["packed_cache"] = mode_name(scenario.mode);
    row["cached_fraction_before"] = cached;
    row["wall_first_token_s"] = run.wall_first_token_s;
    row["wall_exit_s"] = run.wall_exit_s;
    row["first_token_target_met"] = time_met;
    row["peak_rss_target_met"] = memory_met;
    rows.push_back(row);
    return true;
}

}  // namespace

int run_startup_probe(const StartupBenchOptions& options, int64_t prompt_len) {
    EngineOptions defaults;  // exactly what `lmrun generate --model DIR` would use
    defaults.model = options.model_dir;
    defaults.dtype = options.dtype;
    defaults.threads = options.threads;
    defaults.packed_cache_dir = options.packed_cache_dir;
    Stopwatch clock;
    auto engine = LLMEngine::create(defaults.to_config());
    if (!engine.ok()) return log_error("{}", engine.error().message), 2;
    const double ready_s = clock.elapsed_seconds();
    const int64_t vocab = engine.value()->model_config().vocab_size;
    std::mt19937 random(7);
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
    for (int32_t& id : prompt) id = int32_t(random() % uint32_t(vocab));
    SamplingParams params;
    params.max_tokens = 1;
    params.ignore_eos = true;
    params.temperature = 0;
    double first_token_s = 0;
    Status added = engine.value()->add_request("startup", std::move(prompt), params, [&](const auto& delta) {
        if (first_token_s == 0 && !delta.token_ids.empty()) first_token_s = clock.elapsed_seconds();
    });
    if (!added.ok()) return log_error("{}", added.error().message), 1;
    while (engine.value()->has_unfinished_requests()) engine.value()->step();
    const ModelRunner& runner = engine.value()->runner();
    nlohmann::json report = {{"load_s", engine.value()->load_seconds()},
                             {"ready_s", ready_s},
                             {"threads", num_threads()},
                             {"first_token_s", first_token_s},
                             {"peak_rss_bytes", peak_resident_memory_bytes()},
                             {"weight_bytes", runner.model().weight_nbytes()},
                             {"kv_reserved_bytes", runner.kv_cache().reserved_bytes()},
                             {"kv_resident_bytes", runner.kv_cache().resident_bytes()}};
    std::cout << report.dump() << std::endl;
    return 0;
}

int run_startup_bench(const StartupBenchOptions& options, nlohmann::json& json) {
    std::vector<std::string> files = checkpoint_files(options.model_dir);
    const std::string cache_dir = packed_cache_dir_from_option(options.packed_cache_dir);
    std::cout << fmt::format(
        "start-up: fresh `lmrun` processes, engine defaults, median of {}; later starts "
        "map the packed cache in {}\n",
        options.repeats, cache_dir.empty() ? "(none)" : cache_dir);
    std::cout << fmt::format("{:<36} {:>7} {:>7} {:>8} {:>9} {:>7} {:>10} {:>12}   {}\n", "scenario",
                             "threads", "load s", "ready s", "1st tok s", "exit s", "peak MiB", "KV res MiB",
                             "targets");
    nlohmann::json rows = nlohmann::json::array();
    for (PackedCacheMode mode : {PackedCacheMode::None, PackedCacheMode::First, PackedCacheMode::Later}) {
        if (mode != PackedCacheMode::None && cache_dir.empty()) continue;
        if (mode == PackedCacheMode::Later) {
            // An unmeasured start writes the packed weights (when they are not there yet); the
            // measured ones map them.
            if (!spawn_probe(options, 1, cache_dir).ok) {
                std::cout << fmt::format("writing the packed cache in {} failed\n", cache_dir);
                return 1;
            }
            // This model's files (named after its folder), not the other models' in the directory.
            std::filesystem::path model_dir = std::filesystem::absolute(options.model_dir).lexically_normal();
            if (!model_dir.has_filename()) model_dir = model_dir.parent_path();
            const std::string prefix = model_dir.filename().string() + "-";
            for (const std::string& file : checkpoint_files(cache_dir)) {
                if (std::filesystem::path(file).filename().string().starts_with(prefix))
                    files.push_back(file);
            }
        }
        for (bool cold : {false, true}) {
            if (cold && !options.cold) continue;
            for (int64_t prompt_len : options.prompt_lens) {
                if (!measure_scenario(options, Scenario{cold, prompt_len, mode, cache_dir}, files, rows))
                    return 1;
            }
        }
    }
    json["startup"] = rows;
    return 0;
}

}  // namespace lmrun::cli
