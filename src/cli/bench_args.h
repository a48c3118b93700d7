// The options of `lmrun bench` (bench_command.cpp runs them): which model, which workloads at
// which sizes, which kernels' settings, and the reports to write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace lmrun::cli {

struct BenchArgs {
    std::string model;
    std::string random_preset;
    std::string random_dir = "/tmp/lmrun-random-models";
    std::string dtype = "auto";
    std::string quantization;  // "int8": W8A8 weights quantized at load
    bool unquantized_embeddings = false;
    std::string kv_cache_dtype = "auto";
    std::vector<int64_t> prompt_lens{128, 512, 2048};
    std::vector<int64_t> decode_batches{1, 8, 32, 64, 128};
    int64_t decode_context = 128;
    int64_t decode_steps = 8;
    std::vector<int64_t> context_sweep{256, 4096};  // decode at these contexts, batch context_batch
    int64_t context_batch = 8;
    int64_t engine_batch = 64;  // engine overhead per decode step at this batch (0 = skip)
    int64_t repeats = 3;
    int threads = 0;
    std::string json_path;
    std::string plot_path;
    bool profile = false;
    int64_t offline_requests = 0;  // > 0: also run the offline throughput workload
    std::vector<int64_t> offline_prompt_range{100, 512};
    std::vector<int64_t> offline_output_range{100, 512};
    int64_t offline_max_num_seqs = 64;
    double kv_cache_memory_gib = 2;
    int tensor_parallel_size = 1;
    std::string distributed_executor_backend;
    bool compare_tensor_parallel = false;
    bool structured = false;  // only the structured-output benchmark (bench_structured.h)
    std::string tokenizer;    // its tokenizer (random checkpoints have none)
    int64_t structured_batch = 8;
    bool startup = false;       // --startup: only the start-up benchmark (bench_startup.h)
    int64_t startup_probe = 0;  // > 0: be one start-up probe with a prompt of this many tokens
    bool startup_warm_only = false;
    std::string packed_cache_dir;  // --packed-cache: the weights mapped from there (and --startup: measured
                                   // both ways)
};

// Binds every option of the bench subcommand to `args`, with its validator and default.
void add_bench_options(CLI::App& command, BenchArgs& args);

}  // namespace lmrun::cli
