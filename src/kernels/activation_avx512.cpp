// AVX-512 silu(gate) * up rows (see activation.h).

#include "kernels/avx512_intrinsics.h"

#include "kernels/activation.h"
#include "kernels/vec_exp_avx512.h"

namespace lmrun::kernels {

void silu_and_mul_rows_avx512(const float* gate_up, int64_t num_rows, int64_t dim, float* out) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t r = 0; r < num_rows; ++r) {
        const float* gate = gate_up + r * 2 * dim;
        const float* up = gate + dim;
        float* o = out + r * dim;
        for (int64_t i = 0; i < dim; i += 16) {
            __mmask16 mask = dim - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (dim - i)) - 1);
            __m512 g = _mm512_maskz_loadu_ps(mask, gate + i);
            __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
            __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
            _mm512_mask_storeu_ps(o + i, mask, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(mask, up + i)));
        }
    }
}

}  // namespace lmrun::kernels
