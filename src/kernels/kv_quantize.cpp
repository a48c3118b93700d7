#include "kernels/kv_quantize.h"

#include <immintrin.h>

#include <cmath>

#include "kernels/linear_int8.h"

namespace lmrun::kernels {
namespace {

constexpr int kLanes = 8;  // the squared errors are summed in 8 lanes, then lane 0..7 in order

float candidate_scale(float amax, int j) {
    return amax / kFp8E4M3Max * std::exp2(float(j) / float(kFp8ScaleCandidates));
}

// f32_to_fp8_e4m3 on 8 lanes (codes in the low byte of each int32).
__m256i encode_fp8(__m256 x) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
    // Normal: round the mantissa to 3 bits (nearest even), rebias the exponent.
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(magnitude, 20), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(magnitude, _mm256_set1_epi32(0x7ffff)), odd);
    __m256i code = _mm256_sub_epi32(_mm256_srli_epi32(rounded, 20), _mm256_set1_epi32((127 - 7) << 3));
    code = _mm256_min_epi32(code, _mm256_set1_epi32(0x7e));
    // Below 2^-6: multiples of 2^-9, rounded to nearest even by the conversion.
    const __m256 abs = _mm256_castsi256_ps(magnitude);
    const __m256i steps = _mm256_cvtps_epi32(_mm256_mul_ps(abs, _mm256_set1_ps(512.0f)));
    const __m256i subnormal = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x3c800000), magnitude);
    code = _mm256_blendv_epi8(code, steps, subnormal);
    const __m256i saturated = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x43dfffff));
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7e), saturated);
    return _mm256_or_si256(code, sign);
}

// fp8 codes (low byte of each int32 lane) → value / 256, through f16 (attention_avx2.cpp).
__m256 decode_fp8_over_256(__m256i codes) {
    const __m256i words32 = _mm256_slli_epi32(codes, 8);  // byte in the high half of a 16-bit word
    const __m128i words =
        _mm_packus_epi32(_mm256_castsi256_si128(words32), _mm256_extracti128_si256(words32, 1));
    const __m128i half = _mm_and_si128(_mm_srai_epi16(words, 1), _mm_set1_epi16(int16_t(0xbfff)));
    return _mm256_cvtph_ps(half);
}

// Squared error of encoding src / scale, and the codes (when `dst` is set).
float fp8_row_error(const float* src, int64_t dim, float scale, uint8_t* dst) {
    const float inverse = 1.0f / scale;
    const __m256 inv = _mm256_set1_ps(inverse), back_scale = _mm256_set1_ps(scale * 256.0f);
    __m256 error = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + kLanes <= dim; d += kLanes) {
        const __m256 x = _mm256_loadu_ps(src + d);
        const __m256i codes = encode_fp8(_mm256_mul_ps(x, inv));
        const __m256 diff = _mm256_sub_ps(_mm256_mul_ps(decode_fp8_over_256(codes), back_scale), x);
        error = _mm256_add_ps(error, _mm256_mul_ps(diff, diff));
        if (dst) {
            alignas(32) int32_t lanes[kLanes];
            _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), codes);
            for (int i = 0; i < kLanes; ++i) dst[d + i] = uint8_t(lanes[i]);
        }
    }
    alignas(32) float lanes[kLanes];
    _mm256_store_ps(lanes, error);
    float total = 0.0f;
    for (float lane : lanes) total += lane;
    for (; d < dim; ++d) {
        const uint8_t code = f32_to_fp8_e4m3(src[d] * inverse);
        const float diff = fp8_e4m3_to_f32(code) * scale - src[d];
        total += diff * diff;
        if (dst) dst[d] = code;
    }
    return total;
}

float fp8_row_error_reference(const float* src, int64_t dim, float scale, uint8_t* dst) {
    const float inverse = 1.0f / scale;
    float lanes[kLanes] = {};
    float total = 0.0f;
    const int64_t vector_end = dim / kLanes * kLanes;
    for (int64_t d = 0; d < dim; ++d) {
        const uint8_t code = f32_to_fp8_e4m3(src[d] * inverse);
        const float diff = fp8_e4m3_to_f32(code) * scale - src[d];
        if (d < vector_end) {
            lanes[d % kLanes] += diff * diff;
        } else {
            if (d == vector_end)
                for (float lane : lanes) total += lane;
            total += diff * diff;
        }
        if (dst) dst[d] = code;
    }
    if (vector_end == dim)
        for (float lane : lanes) total += lane;
    return total;
}

template <typename ErrorFn>
void quantize_fp8_row(const float* src, int64_t dim, uint8_t* dst, float* scale, ErrorFn&& row_error) {
    const float amax = row_abs_max(src, dim);
    if (amax == 0.0f) {
        for (int64_t d = 0; d < dim; ++d) dst[d] = 0;
        *scale = 0.0f;
        return;
    }
    int best = 0;
    float best_error = INFINITY;
    for (int j = 0; j < kFp8ScaleCandidates; ++j) {
        const float error = row_error(src, dim, candidate_scale(amax, j), nullptr);
        if (error < best_error) best_error = error, best = j;
    }
    *scale = candidate_scale(amax, best);
    row_error(src, dim, *scale, dst);
}

}  // namespace

void quantize_kv_row(const float* src, int64_t dim, DType dtype, uint8_t* dst, float* scale) {
    if (dtype == DType::I8) return quantize_rows_int8(src, 1, dim, dim, false, dst, scale);
    quantize_fp8_row(src, dim, dst, scale, fp8_row_error);
}

void quantize_kv_row_reference(const float* src, int64_t dim, DType dtype, uint8_t* dst, float* scale) {
    if (dtype == DType::I8) {
        *scale = quantize_row_int8_reference(src, dim, reinterpret_cast<int8_t*>(dst));
        return;
    }
    quantize_fp8_row(src, dim, dst, scale, fp8_row_error_reference);
}

}  // namespace lmrun::kernels
