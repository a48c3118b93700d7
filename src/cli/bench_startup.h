// lmrun bench --startup: what a new user waits for. Each measurement is a fresh
// `lmrun` process (a probe) that builds the engine with the defaults of
// `lmrun generate`, submits one prompt of N tokens and reports as soon as the
// first token is sampled: time to load the weights, time until the engine is
// ready, time to first token (the parent's clock, from spawning the process),
// and the process's peak resident memory. Runs with the page cache warm and,
// where this machine lets the checkpoint's pages be dropped (posix_fadvise
// DONTNEED on its files, which touches no other process's cache), cold; each of the
// three ways a start can find the packed weight cache (packed_cache_directory.h): none
// (`--packed-cache none`: it packs the checkpoint), a first start (an empty directory:
// it packs, then writes the file in the background, which the process waits for before
// it exits) and every later start (the default: it maps the file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmrun::cli {

struct StartupBenchOptions {
    std::string model_dir;
    std::string dtype = "auto";
    int threads = 0;
    int64_t repeats = 3;
    std::vector<int64_t> prompt_lens{1, 512};
    bool cold = true;  // also measure with the checkpoint dropped from the page cache
    // The packed cache directory of the later starts ("": the default one; "none": only starts
    // without the cache are measured). First starts get a fresh directory next to it each.
    std::string packed_cache_dir;
};

// The parent: spawns probes, prints a table with the targets of issue 17, fills `json`.
int run_startup_bench(const StartupBenchOptions& options, nlohmann::json& json);

// The probe (a child process): one engine, one prompt of prompt_len tokens, one JSON line on stdout.
int run_startup_probe(const StartupBenchOptions& options, int64_t prompt_len);

}  // namespace lmrun::cli
