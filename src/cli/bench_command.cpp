// lmrun bench: prefill, decode and engine throughput on a model folder, or on a random-weight
// checkpoint of a known shape that it writes first (e.g. --random qwen3-0.6b). It measures the
// machine's own limits first (bench_limits.h) and reports every figure also as a fraction of
// its roofline (from the bytes the loaded model and KV cache dtype really read: --quantization
// int8 and --kv-cache-dtype int8 shrink it) and against the project's targets (issue 5). Times
// are medians of --repeats runs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_args.h"
#include "cli/bench_limits.h"
#include "cli/bench_offline.h"
#include "cli/bench_plot.h"
#include "cli/bench_report.h"
#include "cli/bench_startup.h"
#include "cli/bench_structured.h"
#include "cli/bench_tensor_parallel.h"
#include "cli/bench_workloads.h"
#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/cpu_features.h"
#include "core/logging.h"
#include "core/memory_info.h"
#include "core/parallel.h"
#include "engine/kv_cache.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"
#include "model/quantization_config.h"
#include "model/random_checkpoint.h"
#include "parallel/executor.h"

namespace lmrun::cli {
namespace {

Result<std::string> prepare_model(const BenchArgs& args) {
    if (args.random_preset.empty()) {
        if (args.model.empty()) return make_error("give --model DIR or --random qwen3-0.6b");
        return args.model;
    }
    if (args.random_preset != "qwen3-0.6b")
        return make_error("--random: unknown preset \"{}\"", args.random_preset);
    std::string dir = args.random_dir + "/" + args.random_preset;
    if (!std::filesystem::exists(dir + "/config.json")) {
        log_info("writing a random-weight {} checkpoint to {}", args.random_preset, dir);
        RandomCheckpointOptions options;
        options.config = qwen3_0_6b_config();
        LMRUN_RETURN_IF_ERROR(write_random_checkpoint(dir, options));
    }
    return dir;
}

// Median by step time; the op breakdown comes from the same run.
StepTiming median_timing(std::vector<StepTiming> runs) {
    std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
    return runs[runs.size() / 2];
}

template <typename Fn>
StepTiming repeat(int64_t repeats, Fn&& run) {
    std::vector<StepTiming> runs;
    for (int64_t r = 0; r < repeats; ++r) runs.push_back(run());
    return median_timing(runs);
}

struct BenchContext {
    const BenchArgs& args;
    MachineLimits limits;
    ModelCost cost;
    BenchReport report;
};

void run_prefill_sweep(BenchContext& bench, ModelRunner& runner) {
    for (int64_t length : bench.args.prompt_lens) {
        StepTiming timing = repeat(bench.args.repeats, [&] { return time_prefill(runner, length); });
        BenchRow row = make_bench_row(fmt::format("prefill {}", length), double(length) / timing.seconds,
                                      timing.seconds * 1e3);
        double flops = bench.cost.flops(double(length), double(length) / 2, 1);
        row.roofline_tokens_per_s =
            double(length) / roofline_seconds(bench.limits, bench.cost.weight_bytes, flops);
        if (length == 512)
            row.has_target = true, row.target = ">= 800 tok/s", row.met = row.tokens_per_s >= 800;
        row.op_seconds = timing.op_seconds;
        bench.report.add(row);
    }
}

// Roofline of a decode step: weights and every sequence's KV read once, all FLOPs done.
double decode_roofline(const BenchContext& bench, int64_t batch, int64_t context) {
    double bytes = bench.cost.weight_bytes + double(batch * context) * bench.cost.kv_bytes_per_token;
    double flops = bench.cost.flops(double(batch), double(context), double(batch));
    return double(batch) / roofline_seconds(bench.limits, bytes, flops);
}

std::vector<PlotPoint> run_decode_sweep(BenchContext& bench, ModelRunner& runner) {
    const BenchArgs& args = bench.args;
    std::vector<PlotPoint> points;
    for (int64_t batch : args.decode_batches) {
        StepTiming timing = median_timing(
            time_decode_steps(runner, batch, args.decode_context, args.decode_steps, args.repeats));
        BenchRow row = make_bench_row(fmt::format("decode batch {}", batch), double(batch) / timing.seconds,
                                      timing.seconds * 1e3);
        row.roofline_tokens_per_s = decode_roofline(bench, batch, args.decode_context);
        if (batch == 1) {
            row.has_target = true;
            row.target = ">= 85% of roofline";
            row.met = row.tokens_per_s >= 0.85 * row.roofline_tokens_per_s;
        }
        if (batch == 64)
            row.has_target = true, row.target = ">= 600 tok/s", row.met = row.tokens_per_s >= 600;
        row.op_seconds = timing.op_seconds;
        points.push_back({double(batch), row.tokens_per_s, row.roofline_tokens_per_s});
        bench.report.add(row);
    }
    return points;
}

void run_context_sweep(BenchContext& bench, ModelRunner& runner) {
    const BenchArgs& args = bench.args;
    double first_seconds = 0;
    for (int64_t context : args.context_sweep) {
        StepTiming timing = median_timing(
            time_decode_steps(runner, args.context_batch, context, args.decode_steps, args.repeats));
        BenchRow row = make_bench_row(fmt::format("decode b{} context {}", args.context_batch, context),
                                      double(args.context_batch) / timing.seconds, timing.seconds * 1e3);
        row.roofline_tokens_per_s = decode_roofline(bench, args.context_batch, context);
        if (first_seconds == 0) {
            first_seconds = timing.seconds;
        } else {
            double ratio = timing.seconds / first_seconds;
            row.has_target = true;
            row.target = fmt::format("step {:.2f}x of context {}, <= 2x", ratio, args.context_sweep.front());
            row.met = ratio <= 2.0;
        }
        row.op_seconds = timing.op_seconds;
        bench.report.add(row);
    }
}

// Resident memory while serving against the bound of issue 5: weights + KV arena + 300 MiB.
void report_memory(const EngineDecodeTiming& engine, nlohmann::json& json) {
    const double mib = double(1 << 20);
    const double bound = engine.weight_bytes + engine.kv_cache_bytes + 300 * mib;
    const double other = engine.peak_rss_bytes - engine.weight_bytes - engine.kv_cache_bytes;
    std::cout << fmt::format(
        "memory while serving: peak RSS {:.0f} MiB = weights {:.0f} + KV {:.0f} + {:.0f} MiB "
        "other; bound weights + KV + 300 MiB = {:.0f} MiB ({})\n",
        engine.peak_rss_bytes / mib, engine.weight_bytes / mib, engine.kv_cache_bytes / mib, other / mib,
        bound / mib, engine.peak_rss_bytes <= bound ? "met" : "MISSED");
    json["memory"] = {{"peak_rss_bytes", engine.peak_rss_bytes},
                      {"weight_bytes", engine.weight_bytes},
                      {"kv_cache_bytes", engine.kv_cache_bytes},
                      {"bound_bytes", bound},
                      {"target_met", engine.peak_rss_bytes <= bound}};
}

EngineConfig engine_config_for(const BenchArgs& args, const std::string& model_dir, DType dtype) {
    EngineConfig config;
    config.model_dir = model_dir;
    config.dtype = dtype == DType::F32 ? "float32" : "bfloat16";
    config.quantization = args.quantization;
    config.unquantized_embeddings = args.unquantized_embeddings;
    config.runner.kv_cache_dtype = args.kv_cache_dtype;
    config.num_threads = capped_threads(args.threads);
    config.tensor_parallel_size = args.tensor_parallel_size;
    config.distributed_executor_backend = args.distributed_executor_backend;
    config.runner.max_num_batched_tokens = 2048;
    config.runner.kv_cache_memory_bytes = int64_t(args.kv_cache_memory_gib * double(1ll << 30));
    return config;
}

Status run_engine_workloads(BenchContext& bench, const std::string& model_dir,
                            const ModelConfig& model_config, DType dtype, nlohmann::json& json) {
    const BenchArgs& args = bench.args;
    if (args.engine_batch > 0) {
        EngineConfig config = engine_config_for(args, model_dir, dtype);
        config.runner.max_num_seqs = args.engine_batch;
        config.runner.max_model_len = std::min<int64_t>(model_config.max_position_embeddings, 256);
        LMRUN_ASSIGN_OR_RETURN(EngineDecodeTiming timing,
                               time_engine_decode(config, args.engine_batch, 128, 8));
        double share = timing.overhead_seconds_per_step / timing.seconds_per_step;
        BenchRow row = make_bench_row(fmt::format("engine decode batch {}", args.engine_batch),
                                      double(args.engine_batch) / timing.seconds_per_step,
                                      timing.seconds_per_step * 1e3);
        row.has_target = true;
        row.target = fmt::format("overhead {:.2f}% of the step, < 5%", 100 * share);
        row.met = share < 0.05;
        bench.report.add(row);
        report_memory(timing, json);
    }
    if (args.offline_requests > 0) {
        EngineConfig config = engine_config_for(args, model_dir, dtype);
        config.runner.max_num_seqs = args.offline_max_num_seqs;
        config.runner.max_model_len =
            std::min(model_config.max_position_embeddings,
                     args.offline_prompt_range[1] + args.offline_output_range[1] + 16);
        OfflineWorkload workload;
        workload.num_requests = args.offline_requests;
        workload.min_prompt_len = args.offline_prompt_range[0];
        workload.max_prompt_len = args.offline_prompt_range[1];
        workload.min_output_len = args.offline_output_range[0];
        workload.max_output_len = args.offline_output_range[1];
        LMRUN_ASSIGN_OR_RETURN(OfflineResult offline, run_offline_workload(config, workload));
        BenchRow row = make_bench_row(fmt::format("offline {} req (output)", args.offline_requests),
                                      double(offline.output_tokens) / offline.seconds, 0);
        row.has_target = true, row.target = ">= 400 tok/s", row.met = row.tokens_per_s >= 400;
        bench.report.add(row);
    }
    return ok_status();
}

ModelRunnerConfig runner_config_for(const BenchArgs& args, const ModelConfig& config, const ModelCost& cost) {
    const int64_t max_batch = *std::max_element(args.decode_batches.begin(), args.decode_batches.end());
    const int64_t max_prompt = *std::max_element(args.prompt_lens.begin(), args.prompt_lens.end());
    int64_t max_context = args.decode_context;
    for (int64_t context : args.context_sweep) max_context = std::max(max_context, context);
    ModelRunnerConfig runner;
    runner.kv_cache_dtype = args.kv_cache_dtype;
    runner.max_num_seqs = std::max(max_batch, args.context_batch);
    runner.max_num_batched_tokens = std::min<int64_t>(std::max(max_prompt, args.decode_context), 2048);
    runner.max_model_len =
        std::min(config.max_position_embeddings, std::max(max_prompt, max_context + args.decode_steps) + 16);
    // Room for the largest workload, and at least the --kv-cache-memory budget.
    auto blocks = [&](int64_t batch, int64_t tokens) {
        return batch * ((tokens + runner.block_size - 1) / runner.block_size);
    };
    int64_t blocks_needed =
        std::max(blocks(1, max_prompt), blocks(max_batch, args.decode_context + args.decode_steps));
    for (int64_t context : args.context_sweep) {
        blocks_needed = std::max(blocks_needed, blocks(args.context_batch, context + args.decode_steps));
    }
    double needed_bytes = double(blocks_needed * runner.block_size) * cost.kv_bytes_per_token;
    runner.kv_cache_memory_bytes =
        int64_t(std::max(needed_bytes, args.kv_cache_memory_gib * double(1ll << 30)));
    return runner;
}

int run_structured(const BenchArgs& args, const std::string& model_dir, DType dtype) {
    EngineConfig config = engine_config_for(args, model_dir, dtype);
    config.tokenizer_dir = args.tokenizer;
    config.runner.max_num_seqs = std::max<int64_t>(args.structured_batch, 8);
    config.runner.max_model_len = 1024;
    config.runner.kv_cache_memory_bytes = int64_t(1) << 29;
    StructuredBenchOptions options;
    options.batch = args.structured_batch;
    options.repeats = args.repeats;
    auto result = run_structured_bench(config, options);
    if (!result.ok()) return fail(result.error());
    if (!args.json_path.empty()) {
        std::ofstream(args.json_path) << nlohmann::json{{"model", model_dir},
                                                        {"threads", num_threads()},
                                                        {"isa", isa_name(kernel_isa())},
                                                        {"structured", *result}}
                                             .dump(2)
                                      << "\n";
    }
    return 0;
}

StartupBenchOptions startup_options(const BenchArgs& args, const std::string& model_dir) {
    StartupBenchOptions options;
    options.model_dir = model_dir;
    options.dtype = args.dtype;
    options.threads = args.threads;
    options.repeats = args.repeats;
    options.cold = !args.startup_warm_only;
    options.packed_cache_dir = args.packed_cache_dir;
    return options;
}

// -tp N ranks against one process over the same workloads (--compare-tensor-parallel).
int run_tensor_parallel_comparison(const BenchContext& bench, const std::string& model_dir,
                                   const ModelConfig& config, DType dtype) {
    const BenchArgs& args = bench.args;
    TensorParallelComparison comparison;
    comparison.model_dir = model_dir;
    comparison.dtype = dtype;
    comparison.runner = runner_config_for(args, config, bench.cost);
    comparison.tensor_parallel_size = std::max(2, args.tensor_parallel_size);
    comparison.backend = args.distributed_executor_backend.empty() ? "mp" : args.distributed_executor_backend;
    comparison.prompt_lens = args.prompt_lens;
    comparison.decode_batches = args.decode_batches;
    comparison.decode_context = args.decode_context;
    comparison.decode_steps = args.decode_steps;
    comparison.runs = args.repeats;
    auto result = compare_tensor_parallel(comparison);
    if (!result.ok()) return log_error("{}", result.error().message), 1;
    if (!args.json_path.empty()) std::ofstream(args.json_path) << result.value().dump(2) << "\n";
    return 0;
}

// Measures the machine's limits into bench, then prints them and the model's cost per token
// (and writes both into json).
void measure_limits(BenchContext& bench, DType gemm_storage, nlohmann::json& json) {
    log_info("measuring this machine's limits ({} threads, {} kernels)", num_threads(),
             isa_name(kernel_isa()));
    bench.limits = measure_machine_limits(gemm_storage);
    std::cout << fmt::format(
        "limits: read bandwidth {:.1f} GB/s, {} GEMM peak {:.0f} GOP/s (oneDNN {})\n",
        bench.limits.read_bytes_per_s / 1e9, dtype_name(gemm_storage), bench.limits.gemm_flops_per_s / 1e9,
        bench.limits.onednn_flops_per_s > 0 ? fmt::format("{:.0f}", bench.limits.onednn_flops_per_s / 1e9)
                                            : std::string("has no kernel here"));
    std::cout << fmt::format(
        "model: {:.0f} MiB of weights read per forward, {:.3f} MiB of KV per token, {:.2f} GFLOP per token "
        "(+ attention)\n",
        bench.cost.weight_bytes / double(1 << 20), bench.cost.kv_bytes_per_token / double(1 << 20),
        2 * (bench.cost.layer_params + bench.cost.lm_head_params) / 1e9);
    json["limits"] = {{"read_bytes_per_s", bench.limits.read_bytes_per_s},
                      {"gemm_storage", dtype_name(gemm_storage)},
                      {"gemm_flops_per_s", bench.limits.gemm_flops_per_s},
                      {"onednn_flops_per_s", bench.limits.onednn_flops_per_s}};
    json["weight_bytes_per_forward"] = bench.cost.weight_bytes;
    json["kv_bytes_per_token"] = bench.cost.kv_bytes_per_token;
}

// The prefill, decode and context sweeps on the model runner of rank 0 (behind the executor
// that -tp and the backend choose), each against the limits measured just before them.
int run_runner_workloads(BenchContext& bench, const std::string& model_dir, const ModelConfig& config,
                         DType dtype, const WeightQuantization& quantization, nlohmann::json& json) {
    const BenchArgs& args = bench.args;
    parallel::ExecutorConfig executor_config;
    executor_config.model_dir = model_dir;
    executor_config.dtype = dtype;
    executor_config.quantization = quantization;
    if (!args.packed_cache_dir.empty())
        executor_config.packed_cache.dir = packed_cache_dir_from_option(args.packed_cache_dir);
    executor_config.runner = runner_config_for(args, config, bench.cost);
    executor_config.tensor_parallel_size = args.tensor_parallel_size;
    executor_config.threads_per_rank = capped_threads(args.threads);
    auto backend =
        parallel::resolve_executor_backend(args.distributed_executor_backend, args.tensor_parallel_size);
    if (!backend.ok()) return fail(backend.error());
    executor_config.backend = backend.value();
    auto executor = parallel::Executor::create(executor_config);
    if (!executor.ok()) return fail(executor.error());
    ModelRunner& runner = executor.value()->runner();
    // What rank 0 really reads per forward (its shard under -tp; int8 where quantized).
    bench.cost.weight_bytes = double(runner.model().forward_weight_nbytes());
    measure_limits(bench, runner.model().has_int8_weights() ? DType::I8 : DType::BF16, json);
    run_prefill_sweep(bench, runner);
    std::vector<PlotPoint> points = run_decode_sweep(bench, runner);
    run_context_sweep(bench, runner);
    if (args.profile) bench.report.print_profile();
    json["workloads"] = bench.report.to_json();
    if (!args.json_path.empty()) std::ofstream(args.json_path) << json.dump(2) << "\n";
    if (!args.plot_path.empty()) {
        Status status = write_throughput_svg(
            args.plot_path, points,
            fmt::format("{} decode, {} threads", model_type_name(config.arch), num_threads()));
        if (!status.ok()) return fail(status.error());
    }
    return 0;
}

int run_bench(const BenchArgs& args) {
    for (const auto& [option, range] : {std::pair{"--offline-prompt-range", &args.offline_prompt_range},
                                        std::pair{"--offline-output-range", &args.offline_output_range}}) {
        if ((*range)[0] > (*range)[1])
            return fail(make_error("{}: min {} is more than max {}", option, (*range)[0], (*range)[1]));
    }
    if (args.startup_probe > 0) {
        if (args.model.empty()) return fail(make_error("--startup-probe needs --model"));
        return run_startup_probe(startup_options(args, args.model), args.startup_probe);
    }
    configure_threads(capped_threads(args.threads));
    OpProfiler::instance().set_enabled(args.profile);
    auto model_dir = prepare_model(args);
    if (!model_dir.ok()) return fail(model_dir.error());
    auto config = load_model_config(model_dir.value());
    if (!config.ok()) return fail(config.error());
    auto resolved_dtype = resolve_weight_dtype(args.dtype, config.value());
    if (!resolved_dtype.ok()) return fail(resolved_dtype.error());
    const DType dtype = resolved_dtype.value();
    auto kv_dtype = resolve_kv_cache_dtype(args.kv_cache_dtype, dtype);
    if (!kv_dtype.ok()) return fail(kv_dtype.error());
    auto quantization = parse_weight_quantization(args.quantization, args.unquantized_embeddings);
    if (!quantization.ok()) return fail(quantization.error());
    if (args.structured) return run_structured(args, model_dir.value(), dtype);

    BenchContext bench{args, {}, model_cost(config.value(), dtype, kv_dtype.value()), {}};
    if (args.compare_tensor_parallel)
        return run_tensor_parallel_comparison(bench, model_dir.value(), config.value(), dtype);
    nlohmann::json json = {{"model", model_dir.value()},
                           {"dtype", dtype_name(dtype)},
                           {"weight_quantization", args.quantization.empty() ? "none" : args.quantization},
                           {"kv_cache_dtype", dtype_name(kv_dtype.value())},
                           {"threads", num_threads()},
                           {"isa", isa_name(kernel_isa())}};
    if (args.startup) {
        int status = run_startup_bench(startup_options(args, model_dir.value()), json);
        if (status == 0 && !args.json_path.empty()) std::ofstream(args.json_path) << json.dump(2) << "\n";
        return status;
    }
    std::cout << fmt::format("{} kernels, {} threads, weights {}{}, KV cache {}\n", isa_name(kernel_isa()),
                             num_threads(), dtype_name(dtype),
                             args.quantization == "int8" ? " quantized to int8 (W8A8)" : "",
                             dtype_name(kv_dtype.value()));
    bench.report.print_header();
    // The engine runs first, in a process that has not yet held the runner's larger buffers,
    // so its resident memory is what a fresh `lmrun serve` would show.
    if (Status status = run_engine_workloads(bench, model_dir.value(), config.value(), dtype, json);
        !status.ok()) {
        return fail(status.error());
    }
    return run_runner_workloads(bench, model_dir.value(), config.value(), dtype, quantization.value(), json);
}

}  // namespace

CommandRunner add_bench_command(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* command = app.add_subcommand("bench", "Measure prefill and decode throughput");
    add_bench_options(*command, *args);
    return [args] { return run_bench(*args); };
}

}  // namespace lmrun::cli
