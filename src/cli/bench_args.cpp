#include "cli/bench_args.h"

#include "cli/cli_options.h"

namespace lmrun::cli {

void add_bench_options(CLI::App& command, BenchArgs& args) {
    command.add_option("--model", args.model, "Model folder");
    command.add_option("--random", args.random_preset, "Benchmark a random-weight checkpoint: qwen3-0.6b");
    command.add_flag("--structured", args.structured,
                     "Only structured output: schema compile time, token mask time, constrained decode");
    command.add_option("--tokenizer", args.tokenizer,
                       "Tokenizer folder (for --structured on random checkpoints)");
    command.add_option("--structured-batch", args.structured_batch, "Batch of the constrained decode")
        ->check(integer_range(1, 256))
        ->capture_default_str();
    command.add_option("--random-dir", args.random_dir, "Where random checkpoints are written")
        ->capture_default_str();
    command.add_option("--dtype", args.dtype, "auto, float32, bfloat16")
        ->check(CLI::IsMember({"auto", "float32", "bfloat16", "f32", "bf16"}))
        ->capture_default_str();
    command.add_option("--quantization", args.quantization, "int8: W8A8 weights quantized at load")
        ->check(CLI::IsMember({"int8", "none"}));
    command.add_flag("--unquantized-embeddings", args.unquantized_embeddings,
                     "With --quantization int8: keep the embedding table and LM head in --dtype");
    command.add_option("--kv-cache-dtype", args.kv_cache_dtype, "auto, bfloat16, float32, int8, fp8_e4m3")
        ->check(CLI::IsMember({"auto", "bfloat16", "float32", "int8", "fp8_e4m3", "fp8"}))
        ->capture_default_str();
    command.add_option("--prompt-lens", args.prompt_lens, "Prefill prompt lengths")
        ->delimiter(',')
        ->check(integer_range(1, int64_t(1) << 20))
        ->capture_default_str();
    command.add_option("--decode-batches", args.decode_batches, "Decode batch sizes")
        ->delimiter(',')
        ->check(integer_range(1, 16384))
        ->capture_default_str();
    command.add_option("--decode-context", args.decode_context, "Context tokens per decoding sequence")
        ->check(integer_range(1, int64_t(1) << 24))
        ->capture_default_str();
    command.add_option("--decode-steps", args.decode_steps, "Timed decode steps")
        ->check(integer_range(1, int64_t(1) << 20))
        ->capture_default_str();
    command.add_option("--context-sweep", args.context_sweep, "Decode contexts compared at --context-batch")
        ->delimiter(',')
        ->check(integer_range(1, int64_t(1) << 24))
        ->capture_default_str();
    command.add_option("--context-batch", args.context_batch, "Batch of the context sweep")
        ->check(integer_range(1, 16384))
        ->capture_default_str();
    command
        .add_option("--engine-batch", args.engine_batch, "Engine overhead measured at this batch (0: skip)")
        ->check(integer_range(0, 16384))
        ->capture_default_str();
    command.add_option("--repeats", args.repeats, "Runs per workload (median reported)")
        ->check(integer_range(1, 1000))
        ->capture_default_str();
    command
        .add_option("--threads", args.threads,
                    "Compute threads per rank (default: the cores / ranks; at most one per CPU)")
        ->check(integer_range(0, INT32_MAX));
    command
        .add_option("--tensor-parallel-size", args.tensor_parallel_size,
                    "Ranks the model is split over (-tp)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    command
        .add_option("--distributed-executor-backend", args.distributed_executor_backend,
                    "uni, mp or mpi (default: mp for -tp > 1)")
        ->check(CLI::IsMember({"uni", "mp", "mpi"}));
    command.add_flag(
        "--compare-tensor-parallel", args.compare_tensor_parallel,
        "Only compare prefill and decode on -tp N ranks (cores / N threads each) with one process "
        "(all cores), in alternating runs (--repeats of each)");
    command.add_option("--json", args.json_path, "Write the results as JSON");
    command.add_option("--plot", args.plot_path, "Write decode throughput vs batch size as SVG");
    command.add_flag("--profile", args.profile, "Print where each workload's step time goes, per op");
    command
        .add_option("--offline", args.offline_requests,
                    "Also run N offline requests (nano-vLLM bench.py shape)")
        ->check(integer_range(0, int64_t(1) << 20));
    command.add_option("--offline-prompt-range", args.offline_prompt_range, "Min,max prompt tokens")
        ->delimiter(',')
        ->check(integer_range(1, int64_t(1) << 20))
        ->expected(2)
        ->capture_default_str();
    command.add_option("--offline-output-range", args.offline_output_range, "Min,max output tokens")
        ->delimiter(',')
        ->check(integer_range(1, int64_t(1) << 20))
        ->expected(2)
        ->capture_default_str();
    command
        .add_option("--offline-max-num-seqs", args.offline_max_num_seqs,
                    "Running sequences in the offline run")
        ->check(integer_range(1, 16384))
        ->capture_default_str();
    command
        .add_option("--kv-cache-memory", args.kv_cache_memory_gib,
                    "KV cache GiB (at least what workloads need)")
        ->check(finite_range(0, 1 << 20))
        ->capture_default_str();
    command.add_flag("--startup", args.startup,
                     "Only measure start-up: load, time to first token (1 and 512-token prompts) and peak "
                     "RSS of fresh processes, page cache warm and cold");
    command.add_flag("--startup-warm-only", args.startup_warm_only,
                     "With --startup: skip the cold page cache runs");
    command.add_option(
        "--packed-cache", args.packed_cache_dir,
        "Map the packed weights from a file in this directory (written first when missing; none by "
        "default); with --startup: the directory of the later starts measured (default: lmrun's default, "
        "none: measure only starts without it)");
    command.add_option("--startup-probe", args.startup_probe, "Internal: one start-up probe process")
        ->check(integer_range(1, 1 << 20))
        ->group("");
}

}  // namespace lmrun::cli
