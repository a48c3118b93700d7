// Internal, for AVX2 (non-*_avx512) files only: a vectorised e^x for F32 (about 2 ulp).
// Same method as vec_exp_avx512.h; 2^n is built in the exponent bits, so inputs are clamped
// to the normal range and anything below it returns exactly 0 (e^-inf = 0).
#pragma once

#include <immintrin.h>

namespace lmrun::kernels {

static inline __m256 exp_avx2(__m256 x) {
    const __m256 min_x = _mm256_set1_ps(-87.33f);
    __m256 underflow = _mm256_cmp_ps(x, min_x, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, min_x), _mm256_set1_ps(88.7f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    // n ∈ [-126, 128]: 2^n = bits (n + 127) << 23; n = 128 only for x ≈ 88.7, where p < 1
    // keeps the product finite after splitting 2^128 as 2·2^127.
    __m256i e = _mm256_cvtps_epi32(n);
    __m256i high = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(127));
    e = _mm256_sub_epi32(e, _mm256_and_si256(high, _mm256_set1_epi32(1)));
    p = _mm256_mul_ps(
        p, _mm256_blendv_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(2.0f), _mm256_castsi256_ps(high)));
    __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
    return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, scale));
}

}  // namespace lmrun::kernels
