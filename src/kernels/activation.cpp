#include "kernels/activation.h"

#include <immintrin.h>

#include <cmath>

#include "core/cpu_features.h"
#include "core/parallel.h"
#include "kernels/vec_exp_avx2.h"

namespace lmrun::kernels {

void silu_and_mul_rows_avx2(const float* gate_up, int64_t num_rows, int64_t dim, float* out) {
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int64_t r = 0; r < num_rows; ++r) {
        const float* gate = gate_up + r * 2 * dim;
        const float* up = gate + dim;
        float* o = out + r * dim;
        int64_t i = 0;
        for (; i + 8 <= dim; i += 8) {
            __m256 g = _mm256_loadu_ps(gate + i);
            __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), g));
            __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
            _mm256_storeu_ps(o + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
        }
        for (; i < dim; ++i) o[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    }
}

void silu_and_mul(const float* gate_up, int64_t num_rows, int64_t dim, float* out) {
    auto rows_fn = kernel_isa() >= Isa::Avx512 ? silu_and_mul_rows_avx512 : silu_and_mul_rows_avx2;
    if (num_rows * dim < (1 << 15)) return rows_fn(gate_up, num_rows, dim, out);
    parallel_for(num_rows, [&](int64_t begin, int64_t end) {
        rows_fn(gate_up + begin * 2 * dim, end - begin, dim, out + begin * dim);
    });
}

void silu_and_mul_reference(const float* gate_up, int64_t num_rows, int64_t dim, float* out) {
    for (int64_t r = 0; r < num_rows; ++r) {
        for (int64_t i = 0; i < dim; ++i) {
            double g = gate_up[r * 2 * dim + i];
            double u = gate_up[r * 2 * dim + dim + i];
            out[r * dim + i] = float(g / (1.0 + std::exp(-g)) * u);
        }
    }
}

}  // namespace lmrun::kernels
