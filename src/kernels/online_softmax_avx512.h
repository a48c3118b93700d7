// Internal to the AVX-512 attention tiles (decode F32, decode BF16, prefill BF16): the
// online-softmax update of one row for a chunk of up to 16 keys, as flash attention keeps it:
// a running max m, a running sum l, and an unnormalised output that is rescaled when m grows.
// (Anonymous namespace: included by AVX-512 units only.)
#pragma once

#include <immintrin.h>
#include <math.h>

#include "kernels/isa_local_math.h"
#include "kernels/vec_exp_avx512.h"

namespace lmrun::kernels {
namespace {

// `scores` holds the chunk's scores in the lanes set in `valid` (the rest are ignored). Updates
// the running max m, returns the chunk's softmax weights exp(score - m) (0 outside `valid`) and
// sets `correction` to exp(m_old - m_new), the factor for the output and the sum accumulated so
// far (0 while the row has seen no key, so that its zeros stay zeros). The caller keeps the sum.
inline __m512 online_softmax_weights(__m512 scores, __mmask16 valid, float& m, float& correction) {
    const __m512 masked = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid, scores);
    const float m_new = max_f32(m, _mm512_reduce_max_ps(masked));
    const __m512 p = _mm512_maskz_mov_ps(valid, exp_avx512(_mm512_sub_ps(masked, _mm512_set1_ps(m_new))));
    correction = softmax_correction(m, m_new);
    m = m_new;
    return p;
}

// online_softmax_weights with the running sum l kept as a scalar.
inline __m512 online_softmax_update(__m512 scores, __mmask16 valid, float& m, float& l, float& correction) {
    const __m512 p = online_softmax_weights(scores, valid, m, correction);
    l = l * correction + _mm512_reduce_add_ps(p);
    return p;
}

}  // namespace
}  // namespace lmrun::kernels
