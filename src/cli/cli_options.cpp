#include "cli/cli_options.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/exit_codes.h"
#include "core/json_io.h"
#include "core/logging.h"
#include "core/parallel.h"

namespace lmrun::cli {
namespace {

// Sane upper limits of the engine's sizes; memory is checked against the machine later.
constexpr int64_t kMaxBlockSize = 65536;
constexpr int64_t kMaxNumSeqs = 16384;
constexpr int64_t kMaxBatchedTokens = int64_t(1) << 22;

}  // namespace

CLI::Validator finite_range(double min, double max) {
    const std::string description = fmt::format("FINITE in [{}, {}]", min, max);
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            double value = 0;
            if (!CLI::detail::lexical_cast(text, value)) return fmt::format("{} is not a number", text);
            if (!std::isfinite(value) || value < min || value > max)
                return fmt::format("{} is not a finite number in [{}, {}]", text, min, max);
            return std::string();
        },
        description);
}

CLI::Validator integer_range(int64_t min, int64_t max) {
    const std::string bounds =
        max == INT64_MAX ? fmt::format(">= {}", min) : fmt::format("in [{}, {}]", min, max);
    return CLI::Validator(
        [min, max, bounds](std::string& text) -> std::string {
            // from_chars, not strtoll: an out-of-range number is an error, not INT64_MAX.
            int64_t value = 0;
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (error != std::errc() || end != text.data() + text.size() || value < min || value > max)
                return fmt::format("{} is not an integer {}", text, bounds);
            return std::string();
        },
        "INT " + bounds);
}

CLI::Validator unsigned_integer() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            uint64_t value = 0;
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (error != std::errc() || end != text.data() + text.size())
                return fmt::format("{} is not an integer in [0, {}]", text, UINT64_MAX);
            return std::string();
        },
        "UINT64");
}

int capped_threads(int requested) {
    const int cpus = available_cpus();
    if (requested <= 0) return 0;
    if (requested <= cpus) return requested;
    log_warn("--threads {} is more than the {} CPUs this process may use: using {}", requested, cpus, cpus);
    return cpus;
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::ParseError& error) {
        if (error.get_exit_code() == 0) return app.exit(error);
        // One line, one exit code for every usage error (CLI11's own codes are 100-120).
        std::fprintf(stderr, "lmrun: %s (see --help)\n", error.what());
        return int(kExitUsage);
    }
    return std::nullopt;
}

int fail(const Error& error) {
    log_error("{}", error.message);
    return exit_code_for(error);
}

void EngineOptions::add_to(CLI::App& app) {
    app.add_option("--model", model, "Hugging Face model folder (config.json + safetensors)")->required();
    app.add_option("--tokenizer", tokenizer, "Folder with tokenizer.json (default: the model folder)");
    app.add_option("--dtype", dtype, "Weight dtype: auto, float32, bfloat16")
        ->check(CLI::IsMember({"auto", "float32", "bfloat16", "f32", "bf16"}))
        ->capture_default_str();
    app.add_option("--quantization", quantization,
                   "int8: quantize weights to int8 at load (W8A8, per-channel weights, per-token "
                   "activations); int8 compressed-tensors checkpoints are detected without it")
        ->check(CLI::IsMember({"int8", "none"}));
    app.add_flag("--unquantized-embeddings", unquantized_embeddings,
                 "With --quantization int8: keep the embedding table and LM head in --dtype");
    app.add_option("--block-size", block_size, "Tokens per KV cache block")
        ->check(integer_range(1, kMaxBlockSize))
        ->capture_default_str();
    app.add_option("--max-num-seqs", max_num_seqs, "Sequences running at once")
        ->check(integer_range(1, kMaxNumSeqs))
        ->capture_default_str();
    app.add_option("--max-num-batched-tokens", max_num_batched_tokens, "Tokens computed per step")
        ->check(integer_range(1, kMaxBatchedTokens))
        ->capture_default_str();
    app.add_option("--max-model-len", max_model_len, "Context length (default: the model's)")
        ->check(integer_range(0));
    app.add_option("--kv-cache-memory", kv_cache_memory_gib,
                   "KV cache bound in GiB, committed as blocks are used (default: 4, as vLLM's CPU "
                   "backend, at most half the available RAM)")
        ->check(finite_range(0, 1 << 20));
    app.add_option("--kv-cache-fraction", kv_cache_fraction,
                   "KV cache bound as a fraction of available RAM (when --kv-cache-memory is not given)")
        ->check(finite_range(0.001, 1));
    app.add_option("--kv-cache-dtype", kv_cache_dtype,
                   "KV cache element: auto (the weight dtype), bfloat16, float32, int8, fp8_e4m3 (int8 "
                   "and fp8 keep a scale per token and KV head)")
        ->check(CLI::IsMember({"auto", "bfloat16", "float32", "int8", "fp8_e4m3", "fp8"}))
        ->capture_default_str();
    app.add_flag("--no-prefix-caching", no_prefix_caching, "Disable prefix caching");
    app.add_flag("--no-chunked-prefill", no_chunked_prefill, "Disable chunked prefill");
    app.add_option(
           "--threads", threads,
           "Compute threads per rank (default: the cores / tensor-parallel size; at most one per CPU)")
        ->check(integer_range(0, INT32_MAX));
    app.add_option("--tensor-parallel-size", tensor_parallel_size,
                   "Ranks the model is split over (each holds 1/N of the weights and KV cache)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    app.add_option("--distributed-executor-backend", distributed_executor_backend,
                   "How ranks run: uni (one process), mp (worker processes on this machine; the default for "
                   "-tp > 1), mpi (ranks started by mpirun/srun)")
        ->check(CLI::IsMember({"uni", "mp", "mpi"}));
    app.add_option(
        "--packed-cache", packed_cache_dir,
        fmt::format("Directory of packed weight files, or none. A first start writes the packed "
                    "weights there in the background; later starts map them instead of packing the "
                    "checkpoint (checked against the checkpoint's files and settings; a stale or "
                    "damaged file is rebuilt). Default: {}",
                    default_packed_cache_dir().empty() ? std::string("none ($HOME is not set)")
                                                       : default_packed_cache_dir()));
    app.add_option("--packed-cache-size", packed_cache_size_gib,
                   "Bound of --packed-cache in GiB (least recently used files go first; files of deleted "
                   "model folders always)")
        ->check(finite_range(0.001, 1 << 20))
        ->capture_default_str();
    app.add_option("--kv-offload-dir", kv_offload_dir,
                   "KV tier below RAM: write computed KV blocks to this directory (created if missing) and "
                   "load them back instead of recomputing, across restarts and processes");
    app.add_option("--kv-offload-size", kv_offload_size_gib,
                   "Bound of --kv-offload-dir in GiB (LRU eviction)")
        ->check(finite_range(0.0001, 1 << 20))
        ->capture_default_str();
    app.add_option("--engine-seed", seed, "Seed for requests without their own seed")
        ->check(unsigned_integer());
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
    config.num_threads = capped_threads(threads);
    config.seed = seed;
    config.tensor_parallel_size = tensor_parallel_size;
    config.distributed_executor_backend = distributed_executor_backend;
    config.kv_offload_dir = kv_offload_dir;
    config.packed_cache = {packed_cache_dir_from_option(packed_cache_dir),
                           int64_t(packed_cache_size_gib * double(int64_t(1) << 30))};
    config.kv_offload_bytes = int64_t(kv_offload_size_gib * double(1ll << 30));
    return config;
}

void SamplingOptions::add_to(CLI::App& app) {
    params.max_tokens = 128;
    // Ranges as SamplingParams::validate() has them, checked here first so that a bad value is a
    // usage error before any model is loaded.
    app.add_option("--max-tokens", params.max_tokens, "Maximum new tokens per completion")
        ->check(integer_range(1))
        ->capture_default_str();
    app.add_option("--min-tokens", params.min_tokens, "Minimum new tokens before EOS/stop tokens may end it")
        ->check(integer_range(0));
    app.add_option("--temperature", params.temperature, "0 = greedy")
        ->check(finite_range(0, 100))
        ->capture_default_str();
    app.add_option("--top-k", params.top_k, "Keep the k most likely tokens (0 = off)")
        ->check(integer_range(-1, INT32_MAX));
    app.add_option("--top-p", params.top_p, "Nucleus sampling mass (1 = off)")->check(finite_range(1e-9, 1));
    app.add_option("--min-p", params.min_p, "Drop tokens below min_p x the top probability")
        ->check(finite_range(0, 1));
    app.add_option("--repetition-penalty", params.repetition_penalty, "HF repetition penalty (1 = off)")
        ->check(finite_range(1e-9, 100));
    app.add_option("--presence-penalty", params.presence_penalty, "OpenAI presence penalty")
        ->check(finite_range(-2, 2));
    app.add_option("--frequency-penalty", params.frequency_penalty, "OpenAI frequency penalty")
        ->check(finite_range(-2, 2));
    app.add_option("--seed", params.seed, "Per-request seed (reproducible sampling)")
        ->check(unsigned_integer());
    app.add_option("--stop", params.stop, "Stop string (repeatable); not included in the output");
    app.add_option("--stop-token-ids", stop_token_ids, "Comma-separated token ids that end a completion");
    app.add_flag("--ignore-eos", params.ignore_eos, "Do not stop at the end-of-sequence token");
    app.add_option("--n", params.n, "Completions per prompt")->check(integer_range(1, 128));
    app.add_option("--logprobs", params.logprobs, "Return the top-N log-probabilities of each token")
        ->check(integer_range(0, 20));
    app.add_option("--json-schema", json_schema_file, "Constrain the output to this JSON Schema (a file)");
    app.add_flag("--json-object", json_object, "Constrain the output to a JSON object");
    app.add_option("--regex", regex, "Constrain the output to match this regular expression");
    app.add_option("--choice", choices, "Constrain the output to one of these strings (repeatable)");
    app.add_option("--grammar", grammar_file, "Constrain the output to this EBNF (GBNF) grammar (a file)");
}

std::vector<std::string> expand_option_aliases(int argc, char** argv) {
    std::vector<std::string> args(argv, argv + argc);
    for (std::string& arg : args) {
        if (arg == "-tp")
            arg = "--tensor-parallel-size";
        else if (arg.rfind("-tp=", 0) == 0)
            arg = "--tensor-parallel-size=" + arg.substr(4);
    }
    return args;
}

namespace {

Result<std::string> read_text_file(const std::string& path, const char* option) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return with_subject(make_error(ErrorKind::NotFound, "{} {}: cannot open the file", option, path),
                            path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// --json-schema / --json-object / --regex / --choice / --grammar (at most one).
Result<std::optional<structured::StructuredOutputsParams>> structured_outputs(
    const SamplingOptions& options) {
    using structured::StructuredOutputsParams;
    using Optional = std::optional<StructuredOutputsParams>;
    const int given = int(!options.json_schema_file.empty()) + int(options.json_object) +
                      int(!options.regex.empty()) + int(!options.choices.empty()) +
                      int(!options.grammar_file.empty());
    if (given > 1)
        return make_error("give at most one of --json-schema, --json-object, --regex, --choice, --grammar");
    if (!options.json_schema_file.empty()) {
        LMRUN_ASSIGN_OR_RETURN(nlohmann::json checked, read_json_file(options.json_schema_file));
        (void)checked;  // bounded parse first; the schema keeps its key order as text
        LMRUN_ASSIGN_OR_RETURN(std::string text, read_text_file(options.json_schema_file, "--json-schema"));
        return Optional(StructuredOutputsParams::json_schema(std::move(text)));
    }
    if (options.json_object) return Optional(StructuredOutputsParams::json_object());
    if (!options.regex.empty()) return Optional(StructuredOutputsParams::regex(options.regex));
    if (!options.choices.empty()) return Optional(StructuredOutputsParams::choice(options.choices));
    if (!options.grammar_file.empty()) {
        LMRUN_ASSIGN_OR_RETURN(std::string text, read_text_file(options.grammar_file, "--grammar"));
        return Optional(StructuredOutputsParams::grammar(std::move(text)));
    }
    return Optional();
}

}  // namespace

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
    LMRUN_ASSIGN_OR_RETURN(result.structured_outputs, structured_outputs(*this));
    LMRUN_RETURN_IF_ERROR(result.validate());
    return result;
}

}  // namespace lmrun::cli
