// Perplexity of a token stream under the model, with llama.cpp's llama-perplexity and Hugging
// Face's sliding-window method, run through the same ModelRunner (and kernels, quantization and
// KV cache dtype) as generation. Windows of `context` tokens start every `stride` tokens; each
// window predicts only the tokens no earlier window predicted, so every token after the first
// window is predicted from at least context - stride tokens (stride = context: independent
// chunks, whose first tokens have no context and are not predicted). PPL = exp(mean NLL); the ± is PPL × the
// standard error of the mean NLL (llama.cpp's estimate, first order).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/result.h"
#include "engine/model_runner.h"

namespace lmrun {

struct PerplexityOptions {
    int64_t context = 512;
    int64_t stride = 0;  // 0: context / 2
};

struct PerplexityResult {
    double perplexity = 0;
    double perplexity_error = 0;  // ±, one standard error
    double mean_nll = 0;          // nats per token
    int64_t num_scored = 0;       // tokens predicted
    int64_t num_windows = 0;
    int64_t context = 0, stride = 0;
};

// Called after each window with the running result.
using PerplexityProgressFn =
    std::function<void(int64_t window, int64_t num_windows, const PerplexityResult&)>;

// The runner needs max_model_len >= context and KV blocks for one window; errors name the option.
Result<PerplexityResult> compute_perplexity(ModelRunner& runner, std::span<const int32_t> tokens,
                                            const PerplexityOptions& options,
                                            const PerplexityProgressFn& progress = {});

}  // namespace lmrun
