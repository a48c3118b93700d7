// lmrun perplexity: the perplexity of a text file under the model (llama.cpp's llama-perplexity,
// engine/perplexity.h), through the same kernels, weight quantization and KV cache dtype as
// generation, so a quantization can be judged by the number it costs.
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "engine/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace lmrun::cli {
namespace {

// Far above any model's context; keeps the window's KV sizing arithmetic far from overflow.
constexpr int64_t kMaxWindowTokens = int64_t(1) << 24;

struct PerplexityArgs {
    EngineOptions engine;
    std::string text_path;
    int64_t context = 512;
    int64_t stride = 0;
    int64_t max_tokens = 0;  // 0 = the whole text
    bool json_output = false;
};

Result<std::string> read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorKind::NotFound, "{}: cannot open text file", path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// The model and runner of an EngineConfig, sized for windows of `context` tokens.
Result<std::unique_ptr<ModelRunner>> load_runner(const EngineConfig& engine, int64_t context) {
    LMRUN_ASSIGN_OR_RETURN(ModelConfig model_config, load_model_config(engine.model_dir));
    LMRUN_ASSIGN_OR_RETURN(DType dtype, resolve_weight_dtype(engine.dtype, model_config));
    LMRUN_ASSIGN_OR_RETURN(WeightQuantization quantization,
                           parse_weight_quantization(engine.quantization, engine.unquantized_embeddings));
    LMRUN_ASSIGN_OR_RETURN(
        std::unique_ptr<CausalLM> model,
        CausalLM::load(engine.model_dir, model_config, dtype, {}, quantization, engine.packed_cache));
    ModelRunnerConfig runner = engine.runner;
    runner.max_model_len = std::min(context, model_config.max_position_embeddings);
    runner.max_num_batched_tokens = std::min<int64_t>(runner.max_num_batched_tokens, runner.max_model_len);
    runner.max_num_seqs = std::min<int64_t>(runner.max_num_seqs, 64);
    runner.use_decode_plans = false;  // only prefill runs here
    if (runner.kv_cache_memory_bytes <= 0) {
        KvCacheShape shape;
        LMRUN_ASSIGN_OR_RETURN(shape.dtype, resolve_kv_cache_dtype(runner.kv_cache_dtype, dtype));
        shape.num_layers = model_config.num_hidden_layers;
        shape.block_size = runner.block_size;
        shape.num_kv_heads = model->num_kv_heads_local();
        shape.head_dim = model_config.head_dim;
        runner.kv_cache_memory_bytes =
            shape.bytes_per_block() * ((context + runner.block_size - 1) / runner.block_size + 1);
    }
    return ModelRunner::create(std::move(model), runner);
}

int run_perplexity(const PerplexityArgs& args) {
    EngineConfig engine = args.engine.to_config();
    configure_threads(engine.num_threads);
    auto text = read_text(args.text_path);
    if (!text.ok()) return fail(text.error());
    const std::string tokenizer_dir = engine.tokenizer_dir.empty() ? engine.model_dir : engine.tokenizer_dir;
    auto tokenizer = Tokenizer::from_dir(tokenizer_dir);
    if (!tokenizer.ok()) return fail(tokenizer.error());
    std::vector<int32_t> tokens = tokenizer.value()->encode(text.value());
    if (args.max_tokens > 0 && int64_t(tokens.size()) > args.max_tokens)
        tokens.resize(size_t(args.max_tokens));
    auto runner = load_runner(engine, args.context);
    if (!runner.ok()) return fail(runner.error());
    PerplexityOptions options;
    options.context = std::min(args.context, runner.value()->config().max_model_len);
    options.stride = args.stride;
    Stopwatch timer;
    auto progress = [&](int64_t window, int64_t num_windows, const PerplexityResult& running) {
        if (args.json_output) return;
        std::cerr << fmt::format("\rwindow {}/{}: PPL {:.4f} over {} tokens", window + 1, num_windows,
                                 running.perplexity, running.num_scored)
                  << std::flush;
    };
    auto result = compute_perplexity(*runner.value(), tokens, options, progress);
    if (!args.json_output) std::cerr << "\n";
    if (!result.ok()) return fail(result.error());
    const PerplexityResult& r = result.value();
    const double seconds = timer.elapsed_seconds();
    if (args.json_output) {
        nlohmann::json json = {
            {"model", engine.model_dir},
            {"text", args.text_path},
            {"perplexity", r.perplexity},
            {"perplexity_error", r.perplexity_error},
            {"mean_nll", r.mean_nll},
            {"tokens_scored", r.num_scored},
            {"tokens", tokens.size()},
            {"windows", r.num_windows},
            {"context", r.context},
            {"stride", r.stride},
            {"weight_quantization", engine.quantization.empty() ? "none" : engine.quantization},
            {"kv_cache_dtype", engine.runner.kv_cache_dtype},
            {"seconds", seconds}};
        std::cout << json.dump() << "\n";
        return kExitOk;
    }
    std::cout << fmt::format(
        "PPL = {:.4f} +/- {:.4f} ({} tokens scored of {}, {} windows of {} tokens, stride {}, {:.1f} s)\n",
        r.perplexity, r.perplexity_error, r.num_scored, tokens.size(), r.num_windows, r.context, r.stride,
        seconds);
    return kExitOk;
}

}  // namespace

CommandRunner add_perplexity_command(CLI::App& app) {
    auto args = std::make_shared<PerplexityArgs>();
    CLI::App* command = app.add_subcommand("perplexity", "Perplexity of a text file (sliding windows)");
    args->engine.add_to(*command);
    command->add_option("--text", args->text_path, "Text file to score")->required();
    command->add_option("--context", args->context, "Tokens per window (capped at the model length)")
        ->check(integer_range(2, kMaxWindowTokens))
        ->capture_default_str();
    command->add_option("--stride", args->stride, "Tokens between window starts (default: context / 2)")
        ->check(integer_range(0, kMaxWindowTokens));
    command->add_option("--max-text-tokens", args->max_tokens, "Score only the first N tokens of the text")
        ->check(integer_range(0));
    command->add_flag("--json", args->json_output, "Print the result as one JSON object");
    return [args] { return run_perplexity(*args); };
}

}  // namespace lmrun::cli
