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

    void widen_bf16(const uint16_t* src, float* dst) const {
        for (int64_t c = 0; c < kVecs; ++c) {
            __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16 * c));
            _mm512_storeu_ps(dst + 16 * c, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
        }
    }

    void copy_scaled(const float* src, float factor, float* dst) const {
        __m512 f = _mm512_set1_ps(factor);
        for (int64_t c = 0; c < kVecs; ++c) _mm512_storeu_ps(dst + 16 * c, _mm512_mul_ps(_mm512_loadu_ps(src + 16 * c), f));
    }

    void scale(float* o, float factor) const { copy_scaled(o, factor, o); }

    // Four keys at a time: four independent FMA chains hide the FMA latency.
    void scores(const float* q, const float* keys, int64_t stride, int64_t n, float* s) const {
        int64_t j = 0;
        for (; j + 4 <= n; j += 4) {
            __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
            for (int64_t c = 0; c < kVecs; ++c) {
                __m512 qc = _mm512_loadu_ps(q + 16 * c);
                for (int64_t u = 0; u < 4; ++u)
                    acc[u] = _mm512_fmadd_ps(qc, _mm512_loadu_ps(keys + (j + u) * stride + 16 * c), acc[u]);
            }
            for (int64_t u = 0; u < 4; ++u) s[j + u] = _mm512_reduce_add_ps(acc[u]);
        }
        for (; j < n; ++j) {
            __m512 acc = _mm512_setzero_ps();
            for (int64_t c = 0; c < kVecs; ++c)
                acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * c), _mm512_loadu_ps(keys + j * stride + 16 * c), acc);
            s[j] = _mm512_reduce_add_ps(acc);
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
