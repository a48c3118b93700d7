// Internal to the AVX-512 decode tiles (attention_avx512.cpp, attention_decode_int8_avx512.cpp):
// the horizontal sums of the 16 per-key dot products of a chunk, all at once. Each key's dot
// product is left as 16 partial sums in a vector; one shuffle tree of 4 levels folds the 16
// vectors into one whose lane j is key j's sum, instead of 16 separate reductions. (Anonymous
// namespace: included by AVX-512 units only.)
#pragma once

#include <immintrin.h>

namespace lmrun::kernels {
namespace {

// Lane i of the reduction is the sum of v[kReducePerm[i]]. kReducePerm is its own inverse, so
// storing key j's vector at kReducePerm[j] yields lane j = Σ key j.
constexpr int kReducePerm[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};

inline __m512 reduce16(const __m512* v) {
    __m512 t[8], u[4], w[2];
    for (int i = 0; i < 8; ++i)
        t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[i], v[i + 8], 0x44),
                             _mm512_shuffle_f32x4(v[i], v[i + 8], 0xEE));
    for (int i = 0; i < 4; ++i)
        u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(t[i], t[i + 4], 0x88),
                             _mm512_shuffle_f32x4(t[i], t[i + 4], 0xDD));
    for (int i = 0; i < 2; ++i)
        w[i] =
            _mm512_add_ps(_mm512_shuffle_ps(u[i], u[i + 2], 0x44), _mm512_shuffle_ps(u[i], u[i + 2], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

// The same tree on int32 sums (vpdpbusd's), exact: the same lane moves, integer adds. The last
// level has no two-source integer shuffle of its pattern; vshufps moves the bits as they are.
inline __m512i reduce16_epi32(const __m512i* v) {
    __m512i t[8], u[4], w[2];
    for (int i = 0; i < 8; ++i)
        t[i] = _mm512_add_epi32(_mm512_shuffle_i32x4(v[i], v[i + 8], 0x44),
                                _mm512_shuffle_i32x4(v[i], v[i + 8], 0xEE));
    for (int i = 0; i < 4; ++i)
        u[i] = _mm512_add_epi32(_mm512_shuffle_i32x4(t[i], t[i + 4], 0x88),
                                _mm512_shuffle_i32x4(t[i], t[i + 4], 0xDD));
    for (int i = 0; i < 2; ++i)  // vshufps 0x44 and 0xEE are these unpacks
        w[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(u[i], u[i + 2]), _mm512_unpackhi_epi64(u[i], u[i + 2]));
    const __m512 a = _mm512_castsi512_ps(w[0]), b = _mm512_castsi512_ps(w[1]);
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(a, b, 0x88)),
                            _mm512_castps_si512(_mm512_shuffle_ps(a, b, 0xDD)));
}

}  // namespace
}  // namespace lmrun::kernels
