// Internal to the AVX-512 attention tiles: the bytes of an I8 or F8E4M3 cache row as numbers,
// before the row's scale (kv_quantize.h). (Anonymous namespace: included by AVX-512 units only,
// after avx512_intrinsics.h.)
#pragma once

#include <cstdint>

namespace lmrun::kernels {
namespace {

// 16 bytes as F32; fp8 comes out divided by 256 (it goes through f16: the byte in a word's high
// half, shifted right by one with the sign kept and bit 14 cleared, is the f16 of value / 256,
// subnormals included).
inline __m512 bytes16(const uint8_t* src, bool fp8) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    if (!fp8) return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
    const __m256i words = _mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8);
    return _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(words, 1), _mm256_set1_epi16(int16_t(0xbfff))));
}

// 32 bytes as BF16, exactly: int8 values need 7 significant bits and fp8 / 256 needs 4 bits
// and an exponent within BF16's range, so no rounding happens.
inline __m512i bytes32_as_bf16(const uint8_t* src, bool fp8) {
    return (__m512i)_mm512_cvtne2ps_pbh(bytes16(src + 16, fp8), bytes16(src, fp8));
}

}  // namespace
}  // namespace lmrun::kernels
