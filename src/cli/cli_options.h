// Command-line options shared by the lmrun subcommands: engine settings (model,
// dtype, KV cache, batching) and sampling settings, bound to CLI11 and turned
// into EngineConfig / SamplingParams.
#pragma once

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
    double kv_cache_fraction = 0.4;
    std::string kv_cache_dtype = "auto";
    bool no_prefix_caching = false;
    bool no_chunked_prefill = false;
    int threads = 0;
    uint64_t seed = 0;

    void add_to(CLI::App& app);
    EngineConfig to_config() const;
};

struct SamplingOptions {
    SamplingParams params;
    std::string stop_token_ids;  // comma-separated

    void add_to(CLI::App& app);
    // Applies the parsed text fields; errors name the option.
    Result<SamplingParams> to_params() const;
};

Result<std::vector<int32_t>> parse_id_list(const std::string& text, const std::string& option_name);

}  // namespace lmrun::cli
