#include "cli/cli_options.h"

#include <charconv>

namespace lmrun::cli {

void EngineOptions::add_to(CLI::App& app) {
    app.add_option("--model", model, "Hugging Face model folder (config.json + safetensors)")->required();
    app.add_option("--tokenizer", tokenizer, "Folder with tokenizer.json (default: the model folder)");
    app.add_option("--dtype", dtype, "Weight dtype: auto, float32, bfloat16")->capture_default_str();
    app.add_option("--quantization", quantization,
                   "int8: quantize weights to int8 at load (W8A8, per-channel weights, per-token "
                   "activations); int8 compressed-tensors checkpoints are detected without it")
        ->check(CLI::IsMember({"int8", "none"}));
    app.add_flag("--unquantized-embeddings", unquantized_embeddings,
                 "With --quantization int8: keep the embedding table and LM head in --dtype");
    app.add_option("--block-size", block_size, "Tokens per KV cache block")->capture_default_str();
    app.add_option("--max-num-seqs", max_num_seqs, "Sequences running at once")->capture_default_str();
    app.add_option("--max-num-batched-tokens", max_num_batched_tokens, "Tokens computed per step")
        ->capture_default_str();
    app.add_option("--max-model-len", max_model_len, "Context length (default: the model's)");
    app.add_option("--kv-cache-memory", kv_cache_memory_gib,
                   "KV cache size in GiB (default: a fraction of free RAM)");
    app.add_option("--kv-cache-fraction", kv_cache_fraction, "Fraction of available RAM for the KV cache")
        ->capture_default_str();
    app.add_option("--kv-cache-dtype", kv_cache_dtype,
                   "KV cache element: auto (the weight dtype), bfloat16, float32, int8, fp8_e4m3 (int8 "
                   "and fp8 keep a scale per token and KV head)")
        ->check(CLI::IsMember({"auto", "bfloat16", "float32", "int8", "fp8_e4m3", "fp8"}))
        ->capture_default_str();
    app.add_flag("--no-prefix-caching", no_prefix_caching, "Disable prefix caching");
    app.add_flag("--no-chunked-prefill", no_chunked_prefill, "Disable chunked prefill");
    app.add_option("--threads", threads, "Compute threads (default: one per core)");
    app.add_option("--engine-seed", seed, "Seed for requests without their own seed");
}

EngineConfig EngineOptions::to_config() const {
    EngineConfig config;
    config.model_dir = model;
    config.tokenizer_dir = tokenizer;
    config.dtype = dtype;
    config.quantization = quantization;
    config.unquantized_embeddings = unquantized_embeddings;
    config.runner.block_size = block_size;
    config.runner.max_num_seqs = max_num_seqs;
    config.runner.max_num_batched_tokens = max_num_batched_tokens;
    config.runner.max_model_len = max_model_len;
    config.runner.kv_cache_memory_bytes = int64_t(kv_cache_memory_gib * double(1ll << 30));
    config.runner.kv_cache_memory_fraction = kv_cache_fraction;
    config.runner.kv_cache_dtype = kv_cache_dtype;
    config.enable_prefix_caching = !no_prefix_caching;
    config.enable_chunked_prefill = !no_chunked_prefill;
    config.num_threads = threads;
    config.seed = seed;
    return config;
}

void SamplingOptions::add_to(CLI::App& app) {
    params.max_tokens = 128;
    app.add_option("--max-tokens", params.max_tokens, "Maximum new tokens per completion")
        ->capture_default_str();
    app.add_option("--min-tokens", params.min_tokens, "Minimum new tokens before EOS/stop tokens may end it");
    app.add_option("--temperature", params.temperature, "0 = greedy")->capture_default_str();
    app.add_option("--top-k", params.top_k, "Keep the k most likely tokens (0 = off)");
    app.add_option("--top-p", params.top_p, "Nucleus sampling mass (1 = off)");
    app.add_option("--min-p", params.min_p, "Drop tokens below min_p x the top probability");
    app.add_option("--repetition-penalty", params.repetition_penalty, "HF repetition penalty (1 = off)");
    app.add_option("--presence-penalty", params.presence_penalty, "OpenAI presence penalty");
    app.add_option("--frequency-penalty", params.frequency_penalty, "OpenAI frequency penalty");
    app.add_option("--seed", params.seed, "Per-request seed (reproducible sampling)");
    app.add_option("--stop", params.stop, "Stop string (repeatable); not included in the output");
    app.add_option("--stop-token-ids", stop_token_ids, "Comma-separated token ids that end a completion");
    app.add_flag("--ignore-eos", params.ignore_eos, "Do not stop at the end-of-sequence token");
    app.add_option("--n", params.n, "Completions per prompt");
    app.add_option("--logprobs", params.logprobs, "Return the top-N log-probabilities of each token");
}

Result<std::vector<int32_t>> parse_id_list(const std::string& text, const std::string& option_name) {
    std::vector<int32_t> ids;
    size_t begin = 0;
    while (begin < text.size()) {
        size_t end = text.find(',', begin);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(begin, end - begin);
        int32_t value = 0;
        auto [ptr, error] = std::from_chars(item.data(), item.data() + item.size(), value);
        if (error != std::errc() || ptr != item.data() + item.size() || item.empty()) {
            return make_error("{}: \"{}\" is not a comma-separated list of token ids", option_name, text);
        }
        ids.push_back(value);
        begin = end + 1;
    }
    return ids;
}

Result<SamplingParams> SamplingOptions::to_params() const {
    SamplingParams result = params;
    if (!stop_token_ids.empty()) {
        LMRUN_ASSIGN_OR_RETURN(result.stop_token_ids, parse_id_list(stop_token_ids, "--stop-token-ids"));
    }
    LMRUN_RETURN_IF_ERROR(result.validate());
    return result;
}

}  // namespace lmrun::cli
