// The timed workloads of `lmrun bench`, run directly on a ModelRunner (prefill, decode) or on
// an LLMEngine (engine overhead), plus the model's cost per token that their roofline needs.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/op_profiler.h"
#include "core/result.h"
#include "engine/llm_engine.h"
#include "engine/model_runner.h"

namespace lmrun::cli {

using OpSeconds = std::array<double, size_t(Op::kCount)>;

struct StepTiming {
    double seconds = 0;      // per step (a whole prompt for prefill)
    OpSeconds op_seconds{};  // per step, when the op profiler is on
};

// Prefill of one random prompt of `length` tokens, in chunks of max_num_batched_tokens.
StepTiming time_prefill(ModelRunner& runner, int64_t length);
// A decode step of `batch` sequences that each hold `context` tokens, averaged over `steps`;
// the context is filled once and the same steps are timed `repeats` times.
std::vector<StepTiming> time_decode_steps(ModelRunner& runner, int64_t batch, int64_t context, int64_t steps,
                                          int64_t repeats);

struct EngineDecodeTiming {
    double seconds_per_step = 0;
    double overhead_seconds_per_step = 0;  // schedule + input preparation + sampling + outputs
    // Memory while serving: peak resident bytes from the engine's creation on, and what the
    // weights and the KV arena account for.
    double peak_rss_bytes = 0, weight_bytes = 0, kv_cache_bytes = 0;
};
// Decode steps of `batch` requests through the whole engine, timed once all are decoding.
Result<EngineDecodeTiming> time_engine_decode(const EngineConfig& config, int64_t batch, int64_t prompt_len,
                                              int64_t steps);

// What one token costs the model, for rooflines.
struct ModelCost {
    double layer_params = 0;        // multiply-adds per token in the decoder layers' projections
    double lm_head_params = 0;      // and in the LM head (once per sampled token)
    double weight_bytes = 0;        // bytes of weights a forward pass reads (layers + LM head)
    double kv_bytes_per_token = 0;  // K and V of one token over all layers, with their scales
    int64_t num_layers = 0, num_heads = 0, head_dim = 0;

    // FLOPs of a forward over `tokens` new tokens seeing `context` tokens each on average,
    // sampling `sampled` of them.
    double flops(double tokens, double context, double sampled) const;
};
// weight_bytes assumes every weight in weight_dtype; the bench replaces it with the loaded
// model's own count (CausalLM::forward_weight_nbytes: int8 weights, their scales).
ModelCost model_cost(const ModelConfig& config, DType weight_dtype, DType kv_dtype);

}  // namespace lmrun::cli
