// AVX-512 argmax / softmax over one row of logits (see sampling.h).

#include "kernels/avx512_intrinsics.h"

#include <math.h>

#include "kernels/sampling.h"
#include "kernels/vec_exp_avx512.h"

namespace lmrun::kernels {
namespace {

inline __mmask16 tail_mask(int64_t remaining) {
    return remaining >= 16 ? __mmask16(0xffff) : __mmask16((1u << remaining) - 1);
}

}  // namespace

int32_t argmax_avx512(const float* logits, int64_t vocab_size) {
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < vocab_size; i += 16) {
        // Masked-off lanes load -inf; max_ps(v, acc) returns acc when v is NaN.
        __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(vocab_size - i), logits + i);
        vmax = _mm512_max_ps(v, vmax);
    }
    const float best = _mm512_reduce_max_ps(vmax);
    const __m512 vbest = _mm512_set1_ps(best);
    for (int64_t i = 0; i < vocab_size; i += 16) {
        __mmask16 mask = tail_mask(vocab_size - i);
        __mmask16 hit =
            _mm512_mask_cmp_ps_mask(mask, _mm512_maskz_loadu_ps(mask, logits + i), vbest, _CMP_EQ_OQ);
        if (hit) return int32_t(i + __builtin_ctz(hit));
    }
    return 0;  // all NaN
}

void softmax_avx512(float* logits, int64_t vocab_size, float temperature) {
    const float max = logits[argmax_avx512(logits, vocab_size)];
    const __m512 inv_t = _mm512_set1_ps(1.0f / temperature);
    const __m512 vmax = _mm512_set1_ps(max);
    // Float lanes per 1024 logits, then a double total: a 152k-term float sum would drift ~1e-5.
    double sum = 0;
    for (int64_t block = 0; block < vocab_size; block += 1024) {
        __m512 vsum = _mm512_setzero_ps();
        for (int64_t i = block; i < vocab_size && i < block + 1024; i += 16) {
            __mmask16 mask = tail_mask(vocab_size - i);
            __m512 x = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, logits + i), vmax), inv_t);
            __m512 e = _mm512_maskz_mov_ps(mask, exp_avx512(x));
            _mm512_mask_storeu_ps(logits + i, mask, e);
            vsum = _mm512_add_ps(vsum, e);
        }
        sum += _mm512_reduce_add_ps(vsum);
    }
    const __m512 inv_sum = _mm512_set1_ps(float(1.0 / sum));
    for (int64_t i = 0; i < vocab_size; i += 16) {
        __mmask16 mask = tail_mask(vocab_size - i);
        _mm512_mask_storeu_ps(logits + i, mask,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, logits + i), inv_sum));
    }
}

}  // namespace lmrun::kernels
