// Internal to the AVX2 attention tiles (attention_avx2.cpp, attention_decode_bf16_avx2.cpp): the
// online-softmax step of a row over a chunk of 16 keys, and the reductions it and the scores
// need (reduce8 folds 8 vectors of unreduced dot products into one whose lane i is the sum of
// v[i]). (Anonymous namespace: included by the AVX2 units only.)
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/isa_local_math.h"
#include "kernels/vec_exp_avx2.h"

namespace lmrun::kernels {
namespace {

inline float horizontal_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline float horizontal_max(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Three levels of adds instead of eight separate horizontal sums.
inline __m256 reduce8(const __m256* v) {
    const __m256 h01 = _mm256_hadd_ps(v[0], v[1]), h23 = _mm256_hadd_ps(v[2], v[3]);
    const __m256 h45 = _mm256_hadd_ps(v[4], v[5]), h67 = _mm256_hadd_ps(v[6], v[7]);
    const __m256 h0123 = _mm256_hadd_ps(h01, h23), h4567 = _mm256_hadd_ps(h45, h67);
    return _mm256_add_ps(_mm256_permute2f128_ps(h0123, h4567, 0x20),
                         _mm256_permute2f128_ps(h0123, h4567, 0x31));
}

// One row's online-softmax step over a chunk's scores, keys 0-7 in s_lo and 8-15 in s_hi, of
// which the first `count` are keys (the rest are ignored): updates the row's running max m and
// sum l, sets the weights p (0 past count) and returns the factor for the row's output so far.
inline float online_softmax16(__m256 s_lo, __m256 s_hi, int64_t count, float& m, float& l, __m256& p_lo,
                              __m256& p_hi) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 valid_lo = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)), lane));
    const __m256 valid_hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(int(count) - 8), lane));
    const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
    s_lo = _mm256_blendv_ps(minus_inf, s_lo, valid_lo);
    s_hi = _mm256_blendv_ps(minus_inf, s_hi, valid_hi);
    const float m_new = max_f32(m, horizontal_max(_mm256_max_ps(s_lo, s_hi)));
    const __m256 shift = _mm256_set1_ps(m_new);
    p_lo = _mm256_and_ps(exp_avx2(_mm256_sub_ps(s_lo, shift)), valid_lo);
    p_hi = _mm256_and_ps(exp_avx2(_mm256_sub_ps(s_hi, shift)), valid_hi);
    const float correction = softmax_correction(m, m_new);
    l = l * correction + horizontal_sum(_mm256_add_ps(p_lo, p_hi));
    m = m_new;
    return correction;
}

}  // namespace
}  // namespace lmrun::kernels
