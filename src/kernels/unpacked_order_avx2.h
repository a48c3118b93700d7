// Internal to the AVX2 decode tiles that keep rows in the lane order of vpunpck{l,h}wd
// (attention_decode_bf16_avx2.cpp, attention_decode_int8_avx2.cpp): the unpack works within
// 128-bit lanes, so 16 elements come out as two vectors holding elements 0-3 and 8-11, then 4-7
// and 12-15. A tile stores q in that order (the dot products do not care) and sums P·V in it,
// and puts its outputs back in head order once at the end. (Anonymous namespace: AVX2 units only.)
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lmrun::kernels {
namespace {

// Puts each of `count` rows of D floats from head order into unpacked order, or back: per 16
// elements the order swaps the second quarter with the third, so the same two lane permutes
// go either way. A scalar loop over the element positions took 5% of the int8 tile's samples in
// kernel_bench's decode cases; with these permutes the BF16 tile (KV in cache, Zen 3, 4
// alternating rounds) took 0.82x the time per decode case (median), 0.69x at batch 1 and 128
// tokens of context, where the reorder weighs most.
template <int64_t D>
void reorder_rows(float* rows, int64_t count) {
    static_assert(D % 16 == 0);
    for (int64_t r = 0; r < count; ++r) {
        for (int64_t d = 0; d < D; d += 16) {
            float* group = rows + r * D + d;
            const __m256 first = _mm256_loadu_ps(group), second = _mm256_loadu_ps(group + 8);
            _mm256_storeu_ps(group, _mm256_permute2f128_ps(first, second, 0x20));
            _mm256_storeu_ps(group + 8, _mm256_permute2f128_ps(first, second, 0x31));
        }
    }
}

}  // namespace
}  // namespace lmrun::kernels
