// AVX2 vector ops for the attention tile (attention_tile_driver.h), any head_dim and any cache
// dtype (F32, BF16, I8 and F8E4M3 rows are widened to F32 per key).
#include <immintrin.h>

#include "kernels/attention_tile.h"
#include "kernels/attention_tile_driver.h"
#include "kernels/vec_exp_avx2.h"

namespace lmrun::kernels {
namespace {

float horizontal_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

struct Avx2Ops {
    int64_t dim;

    int64_t head_dim() const { return dim; }

    // One cache row (head_dim elements from element `at` of `base`) as F32: BF16 widened, I8 and
    // F8E4M3 multiplied by the row's scale.
    void widen(const void* base, DType dtype, int64_t at, float scale, float* dst) const {
        int64_t d = 0;
        if (dtype == DType::BF16) {
            const uint16_t* src = static_cast<const uint16_t*>(base) + at;
            for (; d + 8 <= dim; d += 8) {
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
            for (; d + 8 <= dim; d += 8) {
                __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + d));
                _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), s));
            }
        } else {
            // e4m3 → f16 bits: the byte in a word's high half, shifted right by one with the sign
            // kept (srai) and bit 14 cleared, is the f16 of value / 256 (subnormals included).
            const __m256 s = _mm256_set1_ps(scale * 256.0f);
            for (; d + 8 <= dim; d += 8) {
                __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + d));
                __m128i words = _mm_unpacklo_epi8(_mm_setzero_si128(), bytes);
                __m128i half = _mm_and_si128(_mm_srai_epi16(words, 1), _mm_set1_epi16(int16_t(0xbfff)));
                _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_cvtph_ps(half), s));
            }
        }
        for (; d < dim; ++d) dst[d] = kv_byte_value(dtype, src[d]) * scale;
    }

    void copy_scaled(const float* src, float factor, float* dst) const {
        for (int64_t d = 0; d < dim; ++d) dst[d] = src[d] * factor;
    }

    void scale(float* o, float factor) const {
        for (int64_t d = 0; d < dim; ++d) o[d] *= factor;
    }

    float dot(const float* a, const float* b) const {
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t d = 0;
        for (; d + 16 <= dim; d += 16) {
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d + 8), _mm256_loadu_ps(b + d + 8), acc1);
        }
        for (; d + 8 <= dim; d += 8)
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc0);
        float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
        for (; d < dim; ++d) sum += a[d] * b[d];
        return sum;
    }

    // scores[row][j] = q_row · key_j for j < count; keys at `offset` + j·stride elements.
    void score_rows(const TileRows& t, int64_t num_rows, const void* keys, DType dtype, int64_t offset,
                    int64_t stride, int64_t count, const float* scales, int64_t scale_stride) const {
        for (int64_t j = 0; j < count; ++j) {
            const float* key = t.k_row;
            if (dtype == DType::F32) {
                key = static_cast<const float*>(keys) + offset + j * stride;
            } else {
                widen(keys, dtype, offset + j * stride, scales ? scales[j * scale_stride] : 1.0f, t.k_row);
            }
            for (int64_t row = 0; row < num_rows; ++row)
                t.scores[row * kKeyChunk + j] = dot(t.q + row * dim, key);
        }
    }

    // s[j] = e^(s[j] - max) for j < n ≤ kKeyChunk; returns Σ s[j].
    float exp_and_sum(float* s, int64_t n, float max) const {
        alignas(32) float padded[kKeyChunk];
        for (int64_t j = 0; j < kKeyChunk; ++j) padded[j] = j < n ? s[j] - max : -INFINITY;
        __m256 lo = exp_avx2(_mm256_load_ps(padded));
        __m256 hi = exp_avx2(_mm256_load_ps(padded + 8));
        _mm256_store_ps(padded, lo);
        _mm256_store_ps(padded + 8, hi);
        for (int64_t j = 0; j < n; ++j) s[j] = padded[j];
        return horizontal_sum(_mm256_add_ps(lo, hi));
    }

    void accumulate(float* o, const float* p, int64_t n, const float* values, int64_t stride) const {
        for (int64_t j = 0; j < n; ++j) {
            const float* v = values + j * stride;
            __m256 pj = _mm256_set1_ps(p[j]);
            int64_t d = 0;
            for (; d + 8 <= dim; d += 8)
                _mm256_storeu_ps(o + d, _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + d), _mm256_loadu_ps(o + d)));
            for (; d < dim; ++d) o[d] += p[j] * v[d];
        }
    }
};

}  // namespace

void attention_tile_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    attention_tile(Avx2Ops{args.cache.head_dim}, args, tile, scratch);
}

}  // namespace lmrun::kernels
