#include "cli/bench_workloads.h"

#include <algorithm>
#include <random>
#include <vector>

#include "core/memory_info.h"
#include "core/timer.h"
#include "engine/kv_cache.h"

namespace lmrun::cli {
namespace {

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

// Starts the profiler's count and the clock together; finish() divides both by `steps`.
class TimedSection {
  public:
    TimedSection() { OpProfiler::instance().reset(); }
    StepTiming finish(int64_t steps) const {
        StepTiming timing;
        timing.seconds = timer_.elapsed_seconds() / double(steps);
        timing.op_seconds = OpProfiler::instance().seconds();
        for (double& seconds : timing.op_seconds) seconds /= double(steps);
        return timing;
    }

  private:
    Stopwatch timer_;
};

}  // namespace

StepTiming time_prefill(ModelRunner& runner, int64_t length) {
    auto ids = random_tokens(length, runner.model().config().vocab_size, uint64_t(length));
    auto blocks = block_range(0, (length + runner.block_size() - 1) / runner.block_size());
    const int64_t chunk = runner.config().max_num_batched_tokens;
    TimedSection section;
    for (int64_t done = 0; done < length; done += chunk) {
        RunnerSequence seq{ids, blocks, done, std::min(chunk, length - done), done + chunk >= length, {}};
        runner.run(std::span(&seq, 1));
    }
    return section.finish(1);
}

std::vector<StepTiming> time_decode_steps(ModelRunner& runner, int64_t batch, int64_t context, int64_t steps,
                                          int64_t repeats) {
    const int64_t total = context + steps;
    const int64_t blocks_per_seq = (total + runner.block_size() - 1) / runner.block_size();
    std::vector<std::vector<int32_t>> ids, blocks;
    for (int64_t s = 0; s < batch; ++s) {
        ids.push_back(random_tokens(total, runner.model().config().vocab_size, uint64_t(s)));
        blocks.push_back(block_range(s * blocks_per_seq, blocks_per_seq));
    }
    std::vector<RunnerSequence> seqs(static_cast<size_t>(batch));
    const int64_t chunk = runner.config().max_num_batched_tokens;
    for (int64_t s = 0; s < batch; ++s) {  // fill the context one sequence at a time
        for (int64_t done = 0; done < context; done += chunk) {
            seqs[s] = RunnerSequence{ids[s], blocks[s], done, std::min(chunk, context - done), false, {}};
            runner.run(std::span(&seqs[s], 1));
        }
    }
    std::vector<StepTiming> timings;
    for (int64_t repeat = 0; repeat < repeats; ++repeat) {  // each repeat rewrites the same KV slots
        TimedSection section;
        for (int64_t step = 0; step < steps; ++step) {
            for (int64_t s = 0; s < batch; ++s)
                seqs[s] = RunnerSequence{ids[s], blocks[s], context + step, 1, true, {}};
            runner.run(seqs);
        }
        timings.push_back(section.finish(steps));
    }
    return timings;
}

Result<EngineDecodeTiming> time_engine_decode(const EngineConfig& config, int64_t batch, int64_t prompt_len,
                                              int64_t steps) {
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<LLMEngine> engine, LLMEngine::create(config));
    reset_peak_resident_memory();  // loading maps the checkpoint file; serving does not
    const int64_t vocab = engine->model_config().vocab_size;
    for (int64_t i = 0; i < batch; ++i) {
        SamplingParams params;
        params.temperature = 0.6f;
        params.ignore_eos = true;
        params.max_tokens = steps + 8;
        params.seed = uint64_t(i);
        LMRUN_RETURN_IF_ERROR(engine->add_request("engine-decode-" + std::to_string(i),
                                                  random_tokens(prompt_len, vocab, uint64_t(i)), params));
    }
    // The overhead figure needs the op profiler, whatever --profile says.
    const bool was_profiling = OpProfiler::instance().enabled();
    OpProfiler::instance().set_enabled(true);
    // Prefill everything (and a couple of decode steps to settle) before timing.
    while (engine->stats().num_generation_tokens < 3 * batch) engine->step();
    TimedSection section;
    for (int64_t step = 0; step < steps; ++step) engine->step();
    StepTiming timing = section.finish(steps);
    OpProfiler::instance().set_enabled(was_profiling);
    EngineDecodeTiming result;
    result.seconds_per_step = timing.seconds;
    result.peak_rss_bytes = double(peak_resident_memory_bytes());
    result.weight_bytes = double(engine->runner().model().weight_nbytes());
    result.kv_cache_bytes = double(engine->runner().kv_cache_shape().total_bytes());
    for (Op op : {Op::Schedule, Op::PrepareInputs, Op::Sampling, Op::OutputProcessing}) {
        result.overhead_seconds_per_step += timing.op_seconds[size_t(op)];
    }
    return result;
}

double ModelCost::flops(double tokens, double context, double sampled) const {
    // QKᵀ and PV: 2 · 2 · head_dim multiply-adds per (query head, context token), per layer.
    double attention = 4.0 * double(num_layers * num_heads * head_dim) * context * tokens;
    return 2.0 * layer_params * tokens + 2.0 * lm_head_params * sampled + attention;
}

ModelCost model_cost(const ModelConfig& config, DType weight_dtype, DType kv_dtype) {
    ModelCost cost;
    const double hidden = double(config.hidden_size), head_dim = double(config.head_dim);
    const double q = double(config.num_attention_heads) * head_dim;
    const double kv = double(config.num_key_value_heads) * head_dim;
    const double per_layer =
        hidden * (q + 2 * kv) + q * hidden + 3 * hidden * double(config.intermediate_size);
    cost.num_layers = config.num_hidden_layers;
    cost.num_heads = config.num_attention_heads;
    cost.head_dim = config.head_dim;
    cost.layer_params = per_layer * double(config.num_hidden_layers);
    cost.lm_head_params = double(config.vocab_size) * hidden;
    cost.weight_bytes = (cost.layer_params + cost.lm_head_params) * double(dtype_size_bytes(weight_dtype));
    // The cache's own accounting: int8 / fp8 rows carry a scale per token and KV head.
    KvCacheShape shape;
    shape.num_layers = config.num_hidden_layers;
    shape.block_size = 1;
    shape.num_kv_heads = config.num_key_value_heads;
    shape.head_dim = config.head_dim;
    shape.dtype = kv_dtype;
    cost.kv_bytes_per_token = double(shape.bytes_per_block());
    return cost;
}

}  // namespace lmrun::cli
