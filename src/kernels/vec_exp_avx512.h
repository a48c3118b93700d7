// Internal, for *_avx512.cpp files only: a vectorised e^x for F32 (about 2 ulp).
// e^x = 2^n · e^r with n = round(x·log2 e), |r| ≤ ln2/2, e^r by a degree-6 Taylor polynomial;
// Inputs below the normal range (e^x < FLT_MIN) return exactly 0, as vec_exp_avx2.h does:
// letting scalef produce subnormals costs a microcode assist per lane, which made a softmax
// over a row of mostly -inf logits (a grammar's token mask) 12x slower. Overflow gives inf.
#pragma once

#include <immintrin.h>

namespace lmrun::kernels {

static inline __m512 exp_avx512(__m512 x) {
    const __m512 min_x = _mm512_set1_ps(-87.33f);
    const __mmask16 normal = _mm512_cmp_ps_mask(x, min_x, _CMP_GE_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, min_x), _mm512_set1_ps(88.8f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // ln2 split in a part exact in F32 and a remainder, so r = x - n·ln2 keeps its low bits.
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps(normal, _mm512_scalef_ps(p, n));
}

}  // namespace lmrun::kernels
