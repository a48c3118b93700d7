// Command-line options shared by the lmrun subcommands: engine settings (model,
// dtype, KV cache, batching) and sampling settings, bound to CLI11 with validators
// (a bad value is a one-line error and exit code 1) and turned into EngineConfig /
// SamplingParams; plus parsing the command line and failing with an Error's exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/llm_engine.h"
#include "engine/sampling_params.h"

namespace lmrun::cli {

struct EngineOptions {
    std::string model;
    std::string tokenizer;
    std::string dtype = "auto";
    std::string quantization;
    bool unquantized_embeddings = false;
    int64_t block_size = 256;
    int64_t max_num_seqs = 64;
    int64_t max_num_batched_tokens = 2048;
    int64_t max_model_len = 0;
    double kv_cache_memory_gib = 0;
    double kv_cache_fraction = 0;  // 0: the fixed default budget
    std::string kv_cache_dtype = "auto";
    bool no_prefix_caching = false;
    bool no_chunked_prefill = false;
    int threads = 0;
    uint64_t seed = 0;
    int tensor_parallel_size = 1;
    std::string distributed_executor_backend;
    std::string kv_offload_dir;
    std::string packed_cache_dir;  // "": the default directory; "none": no packed cache
    double packed_cache_size_gib = double(kDefaultPackedCacheBytes) / double(int64_t(1) << 30);
    double kv_offload_size_gib = 10;

    void add_to(CLI::App& app);
    EngineConfig to_config() const;
};

struct SamplingOptions {
    SamplingParams params;
    std::string stop_token_ids;  // comma-separated
    // Structured output (at most one).
    std::string json_schema_file;
    std::string regex;
    std::vector<std::string> choices;
    std::string grammar_file;
    bool json_object = false;

    void add_to(CLI::App& app);
    // Applies the parsed text fields; errors name the option.
    Result<SamplingParams> to_params() const;
};

// vLLM's `-tp N` for --tensor-parallel-size N (CLI11 takes one-letter short options only).
std::vector<std::string> expand_option_aliases(int argc, char** argv);

Result<std::vector<int32_t>> parse_id_list(const std::string& text, const std::string& option_name);

// CLI11's Range lets NaN through (every comparison with it is false): this one accepts
// only finite numbers in [min, max].
CLI::Validator finite_range(double min, double max);
// An integer in [min, max], with a message that says so ("-5 is not an integer >= 1").
CLI::Validator integer_range(int64_t min, int64_t max = INT64_MAX);
// Any unsigned 64-bit integer (a seed): CLI11 would wrap "-1" to 2^64 - 1.
CLI::Validator unsigned_integer();
// The compute threads to use for --threads `requested`: 0 means one per CPU this process
// may run on; more than that is capped to it, with a warning saying so.
int capped_threads(int requested);

// Parses the command line into `app`. Returns the exit code when parsing ends the run:
// 0 after --help, 1 (kExitUsage) with a one-line message for a bad option or value;
// nullopt when the chosen subcommand should run.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);
// Logs `error` on one line and returns its exit code (cli/exit_codes.h).
int fail(const Error& error);

}  // namespace lmrun::cli
