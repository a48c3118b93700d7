// Internal to the AVX2 attention tiles (attention_avx2.cpp, attention_prefill_avx2.cpp): one
// cache row as F32. (Anonymous namespace: included by the AVX2 units only.)
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/dtype.h"
#include "kernels/attention.h"
#include "kernels/isa_local_math.h"

namespace lmrun::kernels {
namespace {

// dim elements from element `at` of `base` as F32 into dst: BF16 widened, I8 and F8E4M3
// multiplied by the row's scale (F32 rows are the caller's to copy). The vector part ends at a
// multiple of 8 fixed up front, so that with a constant dim the tail loop folds away (GCC warns
// on the d += 8 form there).
inline void widen_kv_row_avx2(const void* base, DType dtype, int64_t at, float scale, int64_t dim,
                              float* dst) {
    const int64_t vector_end = dim / 8 * 8;
    int64_t d = 0;
    if (dtype == DType::BF16) {
        const uint16_t* src = static_cast<const uint16_t*>(base) + at;
        for (; d < vector_end; d += 8) {
            __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + d));
            __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
            _mm256_storeu_ps(dst + d, _mm256_castsi256_ps(w));
        }
        for (; d < dim; ++d) dst[d] = bf16_to_f32(src[d]);
        return;
    }
    const uint8_t* src = static_cast<const uint8_t*>(base) + at;
    if (dtype == DType::I8) {
        const __m256 s = _mm256_set1_ps(scale);
        for (; d < vector_end; d += 8) {
            __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + d));
            _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), s));
        }
    } else {
        // e4m3 → f16 bits: the byte in a word's high half, shifted right by one with the sign
        // kept (srai) and bit 14 cleared, is the f16 of value / 256 (subnormals included).
        const __m256 s = _mm256_set1_ps(scale * 256.0f);
        for (; d < vector_end; d += 8) {
            __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + d));
            __m128i words = _mm_unpacklo_epi8(_mm_setzero_si128(), bytes);
            __m128i half = _mm_and_si128(_mm_srai_epi16(words, 1), _mm_set1_epi16(int16_t(0xbfff)));
            _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_cvtph_ps(half), s));
        }
    }
    for (; d < dim; ++d) dst[d] = kv_byte_value(dtype, src[d]) * scale;
}

}  // namespace
}  // namespace lmrun::kernels
