// lmrun bench: prefill and decode throughput of the execution core (ModelRunner)
// on a model folder, or on a random-weight checkpoint of a known shape that it
// writes first (e.g. --random qwen3-0.6b). Times are medians of --repeats runs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_offline.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/logging.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "model/random_checkpoint.h"

namespace lmrun::cli {
namespace {

struct BenchArgs {
    std::string model;
    std::string random_preset;
    std::string random_dir = "/tmp/lmrun-random-models";
    std::string dtype = "auto";
    std::vector<int64_t> prompt_lens{512};
    std::vector<int64_t> decode_batches{1, 8, 32, 64};
    int64_t decode_context = 128;
    int64_t decode_steps = 16;
    int64_t repeats = 3;
    int threads = 0;
    std::string json_path;
    int64_t offline_requests = 0;  // > 0: also run the offline throughput workload
    std::vector<int64_t> offline_prompt_range{100, 512};
    std::vector<int64_t> offline_output_range{100, 512};
    int64_t offline_max_num_seqs = 64;
    double kv_cache_memory_gib = 4;
};

Result<std::string> prepare_model(const BenchArgs& args) {
    if (args.random_preset.empty()) {
        if (args.model.empty()) return make_error("give --model DIR or --random qwen3-0.6b");
        return args.model;
    }
    if (args.random_preset != "qwen3-0.6b") return make_error("--random: unknown preset \"{}\"", args.random_preset);
    std::string dir = args.random_dir + "/" + args.random_preset;
    if (!std::filesystem::exists(dir + "/config.json")) {
        log_info("writing a random-weight {} checkpoint to {}", args.random_preset, dir);
        RandomCheckpointOptions options;
        options.config = qwen3_0_6b_config();
        LMRUN_RETURN_IF_ERROR(write_random_checkpoint(dir, options));
    }
    return dir;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

std::vector<int32_t> random_tokens(int64_t count, int64_t vocab, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> ids(static_cast<size_t>(count));
    for (auto& id : ids) id = int32_t(rng() % uint64_t(vocab));
    return ids;
}

std::vector<int32_t> block_range(int64_t first, int64_t count) {
    std::vector<int32_t> blocks(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) blocks[i] = int32_t(first + i);
    return blocks;
}

// Seconds to prefill one prompt of `length` tokens, in chunks of max_num_batched_tokens.
double time_prefill(ModelRunner& runner, int64_t length) {
    auto ids = random_tokens(length, runner.model().config().vocab_size, uint64_t(length));
    auto blocks = block_range(0, (length + runner.block_size() - 1) / runner.block_size());
    const int64_t chunk = runner.config().max_num_batched_tokens;
    Stopwatch timer;
    for (int64_t done = 0; done < length; done += chunk) {
        RunnerSequence seq{ids, blocks, done, std::min(chunk, length - done), done + chunk >= length, {}};
        runner.run(std::span(&seq, 1));
    }
    return timer.elapsed_seconds();
}

// Seconds per decode step of `batch` sequences that each hold `context` tokens.
double time_decode_step(ModelRunner& runner, int64_t batch, int64_t context, int64_t steps) {
    const int64_t total = context + steps;
    const int64_t blocks_per_seq = (total + runner.block_size() - 1) / runner.block_size();
    std::vector<std::vector<int32_t>> ids, blocks;
    for (int64_t s = 0; s < batch; ++s) {
        ids.push_back(random_tokens(total, runner.model().config().vocab_size, uint64_t(s)));
        blocks.push_back(block_range(s * blocks_per_seq, blocks_per_seq));
    }
    std::vector<RunnerSequence> seqs(static_cast<size_t>(batch));
    for (int64_t s = 0; s < batch; ++s) {  // fill the context one sequence at a time
        seqs[s] = RunnerSequence{ids[s], blocks[s], 0, context, true, {}};
        runner.run(std::span(&seqs[s], 1));
    }
    Stopwatch timer;
    for (int64_t step = 0; step < steps; ++step) {
        for (int64_t s = 0; s < batch; ++s) seqs[s] = RunnerSequence{ids[s], blocks[s], context + step, 1, true, {}};
        runner.run(seqs);
    }
    return timer.elapsed_seconds() / double(steps);
}

int run_bench(const BenchArgs& args) {
    configure_threads(args.threads);
    auto model_dir = prepare_model(args);
    if (!model_dir.ok()) return log_error("{}", model_dir.error().message), 2;
    auto config = load_model_config(model_dir.value());
    if (!config.ok()) return log_error("{}", config.error().message), 1;
    auto resolved_dtype = resolve_weight_dtype(args.dtype, config.value());
    if (!resolved_dtype.ok()) return log_error("{}", resolved_dtype.error().message), 2;
    const DType dtype = resolved_dtype.value();
    auto model = CausalLM::load(model_dir.value(), config.value(), dtype);
    if (!model.ok()) return log_error("{}", model.error().message), 1;
    const int64_t max_batch = *std::max_element(args.decode_batches.begin(), args.decode_batches.end());
    const int64_t max_prompt = *std::max_element(args.prompt_lens.begin(), args.prompt_lens.end());
    ModelRunnerConfig runner_config;
    runner_config.max_num_seqs = max_batch;
    runner_config.max_num_batched_tokens = std::min<int64_t>(std::max(max_prompt, args.decode_context), 2048);
    runner_config.max_model_len = std::min(config->max_position_embeddings,
                                           std::max(max_prompt, args.decode_context + args.decode_steps) + 16);
    const int64_t blocks_needed = std::max((max_prompt + 255) / 256,
                                           max_batch * ((args.decode_context + args.decode_steps + 255) / 256));
    auto runner_result = ModelRunner::create(std::move(model).value(), runner_config);
    if (!runner_result.ok()) return log_error("{}", runner_result.error().message), 1;
    ModelRunner& runner = *runner_result.value();
    if (runner.num_kv_blocks() < blocks_needed) {
        return log_error("KV cache too small for the benchmark: {} blocks, need {}", runner.num_kv_blocks(),
                         blocks_needed), 1;
    }
    nlohmann::json report = {{"model", model_dir.value()}, {"dtype", dtype_name(dtype)}, {"threads", num_threads()}};
    std::cout << fmt::format("{:<28} {:>12} {:>12}\n", "workload", "tokens/s", "ms");
    for (int64_t length : args.prompt_lens) {
        std::vector<double> times;
        for (int64_t r = 0; r < args.repeats; ++r) times.push_back(time_prefill(runner, length));
        double seconds = median(times);
        std::cout << fmt::format("{:<28} {:>12.1f} {:>12.2f}\n", fmt::format("prefill {}", length),
                                 double(length) / seconds, seconds * 1e3);
        report["prefill"].push_back({{"prompt_len", length}, {"tokens_per_s", double(length) / seconds}});
    }
    for (int64_t batch : args.decode_batches) {
        std::vector<double> times;
        for (int64_t r = 0; r < args.repeats; ++r) {
            times.push_back(time_decode_step(runner, batch, args.decode_context, args.decode_steps));
        }
        double seconds = median(times);
        std::cout << fmt::format("{:<28} {:>12.1f} {:>12.2f}\n", fmt::format("decode batch {}", batch),
                                 double(batch) / seconds, seconds * 1e3);
        report["decode"].push_back({{"batch", batch}, {"tokens_per_s", double(batch) / seconds}});
    }
    if (args.offline_requests > 0) {
        runner_result.value().reset();  // free the runner before the engine builds its own
        EngineConfig engine_config;
        engine_config.model_dir = model_dir.value();
        engine_config.dtype = dtype == DType::F32 ? "float32" : "bfloat16";
        engine_config.num_threads = args.threads;
        engine_config.runner.max_num_seqs = args.offline_max_num_seqs;
        engine_config.runner.max_num_batched_tokens = 2048;
        engine_config.runner.max_model_len =
            std::min(config->max_position_embeddings, args.offline_prompt_range[1] + args.offline_output_range[1] + 16);
        engine_config.runner.kv_cache_memory_bytes = int64_t(args.kv_cache_memory_gib * double(1ll << 30));
        OfflineWorkload workload;
        workload.num_requests = args.offline_requests;
        workload.min_prompt_len = args.offline_prompt_range[0];
        workload.max_prompt_len = args.offline_prompt_range[1];
        workload.min_output_len = args.offline_output_range[0];
        workload.max_output_len = args.offline_output_range[1];
        auto offline = run_offline_workload(engine_config, workload);
        if (!offline.ok()) return log_error("{}", offline.error().message), 1;
        std::cout << fmt::format("{:<28} {:>12.1f} {:>12.2f}\n",
                                 fmt::format("offline {} req (output)", args.offline_requests),
                                 double(offline->output_tokens) / offline->seconds, offline->seconds * 1e3);
        report["offline"] = offline->to_json();
    }
    if (!args.json_path.empty()) std::ofstream(args.json_path) << report.dump(2) << "\n";
    return 0;
}

}  // namespace

CommandRunner add_bench_command(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* command = app.add_subcommand("bench", "Measure prefill and decode throughput");
    command->add_option("--model", args->model, "Model folder");
    command->add_option("--random", args->random_preset, "Benchmark a random-weight checkpoint: qwen3-0.6b");
    command->add_option("--random-dir", args->random_dir, "Where random checkpoints are written")->capture_default_str();
    command->add_option("--dtype", args->dtype, "auto, float32, bfloat16")->capture_default_str();
    command->add_option("--prompt-lens", args->prompt_lens, "Prefill prompt lengths")->delimiter(',')->capture_default_str();
    command->add_option("--decode-batches", args->decode_batches, "Decode batch sizes")->delimiter(',')->capture_default_str();
    command->add_option("--decode-context", args->decode_context, "Context tokens per decoding sequence")
        ->capture_default_str();
    command->add_option("--decode-steps", args->decode_steps, "Timed decode steps")->capture_default_str();
    command->add_option("--repeats", args->repeats, "Runs per workload (median reported)")->capture_default_str();
    command->add_option("--threads", args->threads, "Compute threads (default: one per core)");
    command->add_option("--json", args->json_path, "Write the results as JSON");
    command->add_option("--offline", args->offline_requests, "Also run N offline requests (nano-vLLM bench.py shape)");
    command->add_option("--offline-prompt-range", args->offline_prompt_range, "Min,max prompt tokens")
        ->delimiter(',')->expected(2)->capture_default_str();
    command->add_option("--offline-output-range", args->offline_output_range, "Min,max output tokens")
        ->delimiter(',')->expected(2)->capture_default_str();
    command->add_option("--offline-max-num-seqs", args->offline_max_num_seqs, "Running sequences in the offline run")
        ->capture_default_str();
    command->add_option("--kv-cache-memory", args->kv_cache_memory_gib, "KV cache GiB for the offline run")
        ->capture_default_str();
    return [args] { return run_bench(*args); };
}

}  // namespace lmrun::cli
