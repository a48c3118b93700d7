#include "kernels/norm.h"

#include <immintrin.h>

#include <cmath>

#include "core/cpu_features.h"
#include "core/parallel.h"

namespace lmrun::kernels {
namespace {

// Below this many elements a parallel region costs more than it saves.
constexpr int64_t kParallelElements = 1 << 15;

float sum_of_squares_avx2(const float* x, int64_t dim) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= dim; i += 16) {
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        acc0 = _mm256_fmadd_ps(a, a, acc0);
        acc1 = _mm256_fmadd_ps(b, b, acc1);
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(acc0, acc1));
    float sum = 0.0f;
    for (float lane : lanes) sum += lane;
    for (; i < dim; ++i) sum += x[i] * x[i];
    return sum;
}

void dispatch(float* x, float* residual, const float* weight, float eps, int64_t num_rows, int64_t dim,
              float* y, bool add) {
    auto rows_fn = kernel_isa() >= Isa::Avx512 ? rms_norm_rows_avx512 : rms_norm_rows_avx2;
    if (num_rows * dim < kParallelElements) return rows_fn(x, residual, weight, eps, num_rows, dim, y, add);
    parallel_for(num_rows, [&](int64_t begin, int64_t end) {
        rows_fn(x + begin * dim, add ? residual + begin * dim : nullptr, weight, eps, end - begin, dim,
                y + begin * dim, add);
    });
}

}  // namespace

void rms_norm_rows_avx2(float* x, float* residual, const float* weight, float eps, int64_t num_rows,
                        int64_t dim, float* y, bool add) {
    for (int64_t r = 0; r < num_rows; ++r) {
        float* xr = x + r * dim;
        float* yr = y + r * dim;
        const float* source = xr;
        if (add) {
            float* res = residual + r * dim;
            for (int64_t i = 0; i < dim; ++i) res[i] += xr[i];
            source = res;
        }
        float inv_rms = 1.0f / std::sqrt(sum_of_squares_avx2(source, dim) / float(dim) + eps);
        for (int64_t i = 0; i < dim; ++i) yr[i] = source[i] * inv_rms * weight[i];
    }
}

void rms_norm(const float* x, const float* weight, float eps, int64_t num_rows, int64_t dim, float* y) {
    dispatch(const_cast<float*>(x), nullptr, weight, eps, num_rows, dim, y, false);
}

void add_rms_norm(float* x, float* residual, const float* weight, float eps, int64_t num_rows, int64_t dim) {
    dispatch(x, residual, weight, eps, num_rows, dim, x, true);
}

void rms_norm_token_heads(float* heads, int64_t num_heads, int64_t head_dim, const float* weight, float eps) {
    auto rows_fn = kernel_isa() >= Isa::Avx512 ? rms_norm_rows_avx512 : rms_norm_rows_avx2;
    // A token's heads are contiguous: one row kernel call.
    rows_fn(heads, nullptr, weight, eps, num_heads, head_dim, heads, false);
}

void rms_norm_heads(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t token_stride,
                    const float* weight, float eps) {
    auto normalize_tokens = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t)
            rms_norm_token_heads(x + t * token_stride, num_heads, head_dim, weight, eps);
    };
    if (num_tokens * num_heads * head_dim < kParallelElements) return normalize_tokens(0, num_tokens);
    parallel_for(num_tokens, normalize_tokens);
}

void rms_norm_reference(const float* x, const float* weight, float eps, int64_t num_rows, int64_t dim,
                        float* y) {
    for (int64_t r = 0; r < num_rows; ++r) {
        double sum = 0;
        for (int64_t i = 0; i < dim; ++i) sum += double(x[r * dim + i]) * x[r * dim + i];
        double inv_rms = 1.0 / std::sqrt(sum / double(dim) + eps);
        for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = float(x[r * dim + i] * inv_rms * weight[i]);
    }
}

void add_rms_norm_reference(float* x, float* residual, const float* weight, float eps, int64_t num_rows,
                            int64_t dim) {
    for (int64_t i = 0; i < num_rows * dim; ++i) residual[i] += x[i];
    rms_norm_reference(residual, weight, eps, num_rows, dim, x);
}

}  // namespace lmrun::kernels
