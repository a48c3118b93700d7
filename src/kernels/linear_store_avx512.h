// Internal to the AVX-512 linear kernels (linear_gemv_avx512.cpp, linear_gemm_bf16_avx512.cpp):
// how a tile's accumulators reach y. (Anonymous namespace: included by AVX-512 units only.)
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lmrun::kernels {
namespace {

// out[i] = acc lane i (+ bias[i] when bias is not null) for i < count, from 4 accumulators of
// 16 lanes (one 64-output tile); a tile at the end of the outputs stores only its first count
// lanes (count >= 64 stores all of them).
inline void store_tile_outputs(const __m512* acc, int64_t count, const float* bias, float* out) {
    for (int64_t j = 0; j < 4; ++j) {
        const int64_t left = count - 16 * j;
        if (left <= 0) break;
        const __mmask16 mask = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
        __m512 sum = acc[j];
        if (bias) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask, bias + 16 * j));
        _mm512_mask_storeu_ps(out + 16 * j, mask, sum);
    }
}

}  // namespace
}  // namespace lmrun::kernels
