// AVX2 GEMV micro-kernels over the packed tiles (layout in linear_gemv.h). With 16 ymm
// registers a call covers half a tile (32 outputs) for up to 2 rows; the driver re-walks the
// chunk (then hot in L1/L2) for the other half and further rows.
#include <immintrin.h>

#include "kernels/linear_gemv.h"
#include "kernels/linear_gemv_driver.h"

namespace lmrun::kernels {
namespace {

struct Bf16Avx2 {
    static constexpr int64_t kCols = 32;
    static constexpr int kMaxRows = 2;

    template <int R>
    static void run_rows(const uint16_t* w, int64_t num_pairs, const float* x, int64_t x_stride, float* acc) {
        __m256 sum[R][4];
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) sum[r][j] = _mm256_loadu_ps(acc + r * kTileOutputs + 8 * j);
        const __m256i high_half = _mm256_set1_epi32(int32_t(0xffff0000u));
        for (int64_t p = 0; p < num_pairs; ++p) {
            __m256 x_even[R], x_odd[R];
            for (int r = 0; r < R; ++r) {
                x_even[r] = _mm256_broadcast_ss(x + r * x_stride + 2 * p);
                x_odd[r] = _mm256_broadcast_ss(x + r * x_stride + 2 * p + 1);
            }
            const uint16_t* wp = w + p * kTileOutputs * 2;
            for (int64_t j = 0; j < 4; ++j) {
                __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 16 * j));
                __m256 w_even = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));
                __m256 w_odd = _mm256_castsi256_ps(_mm256_and_si256(pairs, high_half));
                for (int r = 0; r < R; ++r) {
                    sum[r][j] = _mm256_fmadd_ps(w_even, x_even[r], sum[r][j]);
                    sum[r][j] = _mm256_fmadd_ps(w_odd, x_odd[r], sum[r][j]);
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) _mm256_storeu_ps(acc + r * kTileOutputs + 8 * j, sum[r][j]);
    }

    static void run(int rows, const uint16_t* w, int64_t steps, const float* x, int64_t x_stride, float* acc,
                    int64_t col) {
        w += col * 2;
        acc += col;
        if (rows == 1) return run_rows<1>(w, steps, x, x_stride, acc);
        run_rows<2>(w, steps, x, x_stride, acc);
    }
};

struct F32Avx2 {
    static constexpr int64_t kCols = 32;
    static constexpr int kMaxRows = 2;

    template <int R>
    static void run_rows(const float* w, int64_t num_k, const float* x, int64_t x_stride, float* acc) {
        __m256 sum[R][4];
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) sum[r][j] = _mm256_loadu_ps(acc + r * kTileOutputs + 8 * j);
        for (int64_t k = 0; k < num_k; ++k) {
            __m256 xk[R];
            for (int r = 0; r < R; ++r) xk[r] = _mm256_broadcast_ss(x + r * x_stride + k);
            const float* wk = w + k * kTileOutputs;
            for (int64_t j = 0; j < 4; ++j) {
                __m256 wv = _mm256_loadu_ps(wk + 8 * j);
                for (int r = 0; r < R; ++r) sum[r][j] = _mm256_fmadd_ps(wv, xk[r], sum[r][j]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) _mm256_storeu_ps(acc + r * kTileOutputs + 8 * j, sum[r][j]);
    }

    static void run(int rows, const float* w, int64_t steps, const float* x, int64_t x_stride, float* acc,
                    int64_t col) {
        w += col;
        acc += col;
        if (rows == 1) return run_rows<1>(w, steps, x, x_stride, acc);
        run_rows<2>(w, steps, x, x_stride, acc);
    }
};

}  // namespace

void linear_gemv_avx2(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    if (w.dtype == DType::BF16) {
        gemv_driver<Bf16Avx2, uint16_t>(x, num_rows, w, bias, y);
    } else {
        gemv_driver<F32Avx2, float>(x, num_rows, w, bias, y);
    }
}

}  // namespace lmrun::kernels
