#include "kernels/sampling.h"

#include <immintrin.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/cpu_features.h"
#include "kernels/vec_exp_avx2.h"

namespace lmrun::kernels {

// Two passes (max, then first index holding it) keep ties on the lowest id without
// tracking index vectors; a 152k-entry row stays in L2 between them.
int32_t argmax_avx2(const float* logits, int64_t vocab_size) {
    float best = -INFINITY;
    int64_t i = 0;
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    // max_ps(v, acc) returns acc when v is NaN, so NaNs are skipped.
    for (; i + 8 <= vocab_size; i += 8) vmax = _mm256_max_ps(_mm256_loadu_ps(logits + i), vmax);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, vmax);
    for (float lane : lanes) best = lane > best ? lane : best;
    for (; i < vocab_size; ++i) best = logits[i] > best ? logits[i] : best;
    for (int64_t j = 0; j < vocab_size; ++j)
        if (logits[j] == best) return int32_t(j);
    return 0;  // all NaN
}

void softmax_avx2(float* logits, int64_t vocab_size, float temperature) {
    int32_t top = argmax_avx2(logits, vocab_size);
    const float max = logits[top];
    const __m256 inv_t = _mm256_set1_ps(1.0f / temperature);
    const __m256 vmax = _mm256_set1_ps(max);
    // Float lanes per 1024 logits, then a double total: a 152k-term float sum would drift ~1e-5.
    double sum = 0;
    int64_t i = 0;
    while (i + 8 <= vocab_size) {
        __m256 vsum = _mm256_setzero_ps();
        for (int64_t block_end = i + 1024; i + 8 <= vocab_size && i < block_end; i += 8) {
            __m256 e = exp_avx2(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(logits + i), vmax), inv_t));
            _mm256_storeu_ps(logits + i, e);
            vsum = _mm256_add_ps(vsum, e);
        }
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, vsum);
        for (float lane : lanes) sum += lane;
    }
    for (; i < vocab_size; ++i) sum += (logits[i] = std::exp((logits[i] - max) / temperature));
    const __m256 inv_sum = _mm256_set1_ps(float(1.0 / sum));
    for (i = 0; i + 8 <= vocab_size; i += 8)
        _mm256_storeu_ps(logits + i, _mm256_mul_ps(_mm256_loadu_ps(logits + i), inv_sum));
    for (; i < vocab_size; ++i) logits[i] *= float(1.0 / sum);
}

int32_t argmax(const float* logits, int64_t vocab_size) {
    return kernel_isa() >= Isa::Avx512 ? argmax_avx512(logits, vocab_size) : argmax_avx2(logits, vocab_size);
}

void softmax(float* logits, int64_t vocab_size, float temperature) {
    LMRUN_CHECK(temperature > 0.0f, "softmax temperature must be > 0 (got %g)", double(temperature));
    if (kernel_isa() >= Isa::Avx512) return softmax_avx512(logits, vocab_size, temperature);
    softmax_avx2(logits, vocab_size, temperature);
}

int32_t argmax_reference(const float* logits, int64_t vocab_size) {
    int64_t best = -1;
    for (int64_t i = 0; i < vocab_size; ++i)
        if (!std::isnan(logits[i]) && (best < 0 || logits[i] > logits[best])) best = i;
    return int32_t(best < 0 ? 0 : best);
}

void softmax_reference(float* logits, int64_t vocab_size, float temperature) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < vocab_size; ++i) max = std::max(max, double(logits[i]));
    std::vector<double> e(static_cast<size_t>(vocab_size));
    double sum = 0;
    for (int64_t i = 0; i < vocab_size; ++i) sum += (e[i] = std::exp((logits[i] - max) / temperature));
    for (int64_t i = 0; i < vocab_size; ++i) logits[i] = float(e[i] / sum);
}

}  // namespace lmrun::kernels
