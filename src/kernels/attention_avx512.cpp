// AVX-512 vector ops for the attention tile (attention_tile_driver.h), with head_dim a
// compile-time constant so each row lives in D/16 registers.
// GCC 12 reports _mm512_undefined_ps() inside its own intrinsics as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/attention_tile.h"
#include "kernels/attention_tile_driver.h"
#include "kernels/vec_exp_avx512.h"

namespace lmrun::kernels {
namespace {

template <int64_t D>
struct Avx512Ops {
    static_assert(D % 16 == 0);
    static constexpr int64_t kVecs = D / 16;

    int64_t head_dim() const { return D; }

    static __m512 widen16(const uint16_t* src) {
        __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }

    void widen_bf16(const uint16_t* src, float* dst) const {
        for (int64_t c = 0; c < kVecs; ++c) _mm512_storeu_ps(dst + 16 * c, widen16(src + 16 * c));
    }

    void copy_scaled(const float* src, float factor, float* dst) const {
        __m512 f = _mm512_set1_ps(factor);
        for (int64_t c = 0; c < kVecs; ++c) _mm512_storeu_ps(dst + 16 * c, _mm512_mul_ps(_mm512_loadu_ps(src + 16 * c), f));
    }

    void scale(float* o, float factor) const { copy_scaled(o, factor, o); }

    // scores[row][j] = q_row · key_j for j < count; keys at `offset` + j·stride elements. Each
    // key is loaded (BF16 widened) into registers once and used by every row of the tile; two
    // accumulators per dot product halve the FMA dependency chain.
    void score_rows(const TileRows& t, int64_t num_rows, const void* keys, DType dtype,
                    int64_t offset, int64_t stride, int64_t count) const {
        for (int64_t j = 0; j < count; ++j) {
            __m512 key[kVecs];
            if (dtype == DType::F32) {
                const float* src = static_cast<const float*>(keys) + offset + j * stride;
                for (int64_t c = 0; c < kVecs; ++c) key[c] = _mm512_loadu_ps(src + 16 * c);
            } else {
                const uint16_t* src = static_cast<const uint16_t*>(keys) + offset + j * stride;
                for (int64_t c = 0; c < kVecs; ++c) key[c] = widen16(src + 16 * c);
            }
            for (int64_t row = 0; row < num_rows; ++row) {
                const float* q = t.q + row * D;
                __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
                for (int64_t c = 0; c + 1 < kVecs; c += 2) {
                    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * c), key[c], acc0);
                    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * c + 16), key[c + 1], acc1);
                }
                if (kVecs % 2) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + D - 16), key[kVecs - 1], acc0);
                t.scores[row * kKeyChunk + j] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
            }
        }
    }

    float exp_and_sum(float* s, int64_t n, float max) const {
        __mmask16 mask = __mmask16((1u << n) - 1);
        __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, s), _mm512_set1_ps(max));
        __m512 e = _mm512_maskz_mov_ps(mask, exp_avx512(x));
        _mm512_mask_storeu_ps(s, mask, e);
        return _mm512_reduce_add_ps(e);
    }

    void accumulate(float* o, const float* p, int64_t n, const float* values, int64_t stride) const {
        __m512 acc[kVecs];
        for (int64_t c = 0; c < kVecs; ++c) acc[c] = _mm512_loadu_ps(o + 16 * c);
        for (int64_t j = 0; j < n; ++j) {
            __m512 pj = _mm512_set1_ps(p[j]);
            for (int64_t c = 0; c < kVecs; ++c)
                acc[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(values + j * stride + 16 * c), acc[c]);
        }
        for (int64_t c = 0; c < kVecs; ++c) _mm512_storeu_ps(o + 16 * c, acc[c]);
    }
};

// head_dim as a template parameter, chosen once per call (FlashInfer's DISPATCH_HEAD_DIM).
template <typename Fn>
bool dispatch_head_dim(int64_t head_dim, Fn&& fn) {
    switch (head_dim) {
        case 16: fn(Avx512Ops<16>{}); return true;
        case 32: fn(Avx512Ops<32>{}); return true;
        case 64: fn(Avx512Ops<64>{}); return true;
        case 128: fn(Avx512Ops<128>{}); return true;
        case 256: fn(Avx512Ops<256>{}); return true;
        default: return false;
    }
}

}  // namespace

bool attention_avx512_supports(int64_t head_dim) {
    return dispatch_head_dim(head_dim, [](auto) {});
}

void attention_tile_avx512(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    dispatch_head_dim(args.cache.head_dim, [&](auto ops) { attention_tile(ops, args, tile, scratch); });
}

}  // namespace lmrun::kernels
