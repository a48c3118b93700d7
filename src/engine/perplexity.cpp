#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lmrun {
namespace {

// Running sums of per-token NLLs.
struct NllSums {
    double sum = 0, sum_squares = 0;
    int64_t count = 0;

    void add(double nll) {
        sum += nll;
        sum_squares += nll * nll;
        ++count;
    }
    PerplexityResult result() const {
        PerplexityResult r;
        r.num_scored = count;
        if (count == 0) return r;
        r.mean_nll = sum / double(count);
        r.perplexity = std::exp(r.mean_nll);
        if (count > 1) {
            const double variance = std::max(0.0, sum_squares / double(count) - r.mean_nll * r.mean_nll);
            r.perplexity_error = r.perplexity * std::sqrt(variance / double(count - 1));
        }
        return r;
    }
};

// -log softmax(logits)[target], in double.
double token_nll(std::span<const float> logits, int32_t target) {
    float max = logits[0];
    for (float value : logits) max = std::max(max, value);
    double total = 0;
    for (float value : logits) total += std::exp(double(value) - max);
    return std::log(total) + max - double(logits[size_t(target)]);
}

Status check_options(const ModelRunner& runner, std::span<const int32_t> tokens, int64_t context,
                     int64_t stride) {
    const int64_t vocab = runner.model().config().vocab_size;
    if (context < 2) return make_error("--context must be at least 2, got {}", context);
    if (context > runner.config().max_model_len)
        return make_error("--context {} exceeds the model length {} (--max-model-len)", context,
                          runner.config().max_model_len);
    if (stride < 1 || stride > context)
        return make_error("--stride must be in [1, context = {}], got {}", context, stride);
    if ((context + runner.block_size() - 1) / runner.block_size() > runner.num_kv_blocks())
        return make_error(ErrorKind::ResourceExhausted,
                          "the KV cache has {} blocks, a window of {} tokens needs more",
                          runner.num_kv_blocks(), context);
    if (tokens.size() < 2)
        return make_error("the text has {} tokens; perplexity needs at least 2", tokens.size());
    for (int32_t id : tokens)
        if (id < 0 || id >= vocab)
            return make_error("token id {} is outside the vocabulary [0, {})", id, vocab);
    return ok_status();
}

}  // namespace

Result<PerplexityResult> compute_perplexity(ModelRunner& runner, std::span<const int32_t> tokens,
                                            const PerplexityOptions& options,
                                            const PerplexityProgressFn& progress) {
    const int64_t context = options.context;
    const int64_t stride = options.stride > 0 ? options.stride : std::max<int64_t>(1, context / 2);
    LMRUN_RETURN_IF_ERROR(check_options(runner, tokens, context, stride));
    const int64_t total = int64_t(tokens.size());
    const int64_t vocab = runner.model().config().vocab_size;
    const int64_t chunk = runner.config().max_num_batched_tokens;
    std::vector<int32_t> blocks(size_t((context + runner.block_size() - 1) / runner.block_size()));
    for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = int32_t(i);
    // Windows start at 0, stride, 2·stride, ... until one reaches the end of the text.
    const int64_t num_windows = total <= context ? 1 : (total - context + stride - 1) / stride + 1;
    NllSums sums;
    int64_t next_target = 1;  // the first token no window has predicted yet
    for (int64_t w = 0; w < num_windows; ++w) {
        const int64_t begin = w * stride;
        const int64_t end = std::min(total, begin + context);
        std::span<const int32_t> window = tokens.subspan(size_t(begin), size_t(end - begin));
        for (int64_t c0 = 0; c0 < end - begin; c0 += chunk) {
            const int64_t c1 = std::min(end - begin, c0 + chunk);
            RunnerSequence seq{window, blocks, c0, c1 - c0, false, {}};
            // Row i of the chunk predicts window token c0 + i + 1, i.e. token begin + c0 + i + 1.
            const int64_t first_row = std::max<int64_t>(0, next_target - begin - 1 - c0);
            if (first_row >= c1 - c0 || (c1 == end - begin && first_row >= c1 - c0 - 1)) {
                runner.score_rows(seq, c1 - c0, [](int64_t, int64_t, std::span<const float>) {});
                continue;  // keys only: nothing in this chunk is predicted
            }
            runner.score_rows(seq, first_row,
                              [&](int64_t first, int64_t count, std::span<const float> logits) {
                                  for (int64_t i = 0; i < count; ++i) {
                                      const int64_t target = begin + c0 + first + i + 1;
                                      if (target >= end)
                                          break;  // the window's last row predicts past the window
                                      sums.add(token_nll(logits.subspan(size_t(i * vocab), size_t(vocab)),
                                                         tokens[size_t(target)]));
                                  }
                              });
        }
        next_target = end;
        if (progress) {
            PerplexityResult running = sums.result();
            running.num_windows = w + 1;
            progress(w, num_windows, running);
        }
    }
    PerplexityResult result = sums.result();
    result.num_windows = num_windows;
    result.context = context;
    result.stride = stride;
    return result;
}

}  // namespace lmrun
