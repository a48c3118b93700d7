// AVX-512 RMSNorm rows (see norm.h).

#include "kernels/avx512_intrinsics.h"

#include <math.h>

#include "kernels/norm.h"

namespace lmrun::kernels {

void rms_norm_rows_avx512(float* x, float* residual, const float* weight, float eps, int64_t num_rows,
                          int64_t dim, float* y, bool add) {
    for (int64_t r = 0; r < num_rows; ++r) {
        float* xr = x + r * dim;
        float* yr = y + r * dim;
        float* res = add ? residual + r * dim : nullptr;
        const float* source = add ? res : xr;
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (int64_t i = 0; i < dim; i += 16) {
            // Masked tail: one code path for any dim.
            __mmask16 mask = dim - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (dim - i)) - 1);
            __m512 v = _mm512_maskz_loadu_ps(mask, xr + i);
            if (add) {
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, res + i));
                _mm512_mask_storeu_ps(res + i, mask, v);
            }
            if ((i / 16) % 2 == 0) {
                acc0 = _mm512_fmadd_ps(v, v, acc0);
            } else {
                acc1 = _mm512_fmadd_ps(v, v, acc1);
            }
        }
        float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
        __m512 inv_rms = _mm512_set1_ps(1.0f / sqrtf(sum / float(dim) + eps));
        for (int64_t i = 0; i < dim; i += 16) {
            __mmask16 mask = dim - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (dim - i)) - 1);
            __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, source + i), inv_rms);
            _mm512_mask_storeu_ps(yr + i, mask, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(mask, weight + i)));
        }
    }
}

}  // namespace lmrun::kernels
