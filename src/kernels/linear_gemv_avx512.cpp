// AVX-512 GEMV micro-kernels over the packed tiles (layout in linear_gemv.h).
// BF16 weights are widened to F32 with a shift/mask (exact), so the result keeps F32-activation
// accuracy; the loop is bound by the weight stream, not by the FMAs, for up to 4 rows.

#include "kernels/avx512_intrinsics.h"

#include "kernels/dispatch_constant.h"
#include "kernels/linear_gemv.h"
#include "kernels/linear_gemv_driver.h"
#include "kernels/linear_store_avx512.h"

namespace lmrun::kernels {
namespace {

struct Bf16Avx512 {
    static constexpr int64_t kCols = 64;
    static constexpr int kMaxRows = 4;
    static constexpr int64_t kPassRows = 8;

    template <int R>
    static void run_rows(const uint16_t* w, int64_t num_pairs, const float* x, int64_t x_stride, float* acc) {
        __m512 sum[R][4];
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) sum[r][j] = _mm512_loadu_ps(acc + r * kTileOutputs + 16 * j);
        const __m512i high_half = _mm512_set1_epi32(int32_t(0xffff0000u));
        for (int64_t p = 0; p < num_pairs; ++p) {
            __m512 x_even[R], x_odd[R];
            for (int r = 0; r < R; ++r) {
                x_even[r] = _mm512_set1_ps(x[r * x_stride + 2 * p]);
                x_odd[r] = _mm512_set1_ps(x[r * x_stride + 2 * p + 1]);
            }
            const uint16_t* wp = w + p * kTileOutputs * 2;
            for (int64_t j = 0; j < 4; ++j) {
                // 16 lanes of (w[k], w[k+1]) bf16 pairs: the low half is k, the high half k+1.
                __m512i pairs = _mm512_loadu_si512(wp + 32 * j);
                __m512 w_even = _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16));
                __m512 w_odd = _mm512_castsi512_ps(_mm512_and_si512(pairs, high_half));
                for (int r = 0; r < R; ++r) {
                    sum[r][j] = _mm512_fmadd_ps(w_even, x_even[r], sum[r][j]);
                    sum[r][j] = _mm512_fmadd_ps(w_odd, x_odd[r], sum[r][j]);
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) _mm512_storeu_ps(acc + r * kTileOutputs + 16 * j, sum[r][j]);
    }

    // rows in [1, kMaxRows]; the tile's 64 outputs are one column slice (col = 0).
    static void run(int rows, const uint16_t* w, int64_t steps, const float* x, int64_t x_stride, float* acc,
                    int64_t col, NextChunkPrefetch /*prefetch*/) {
        dispatch_constant<1, 2, 3, 4>(
            rows, [&](auto r) { run_rows<decltype(r)::value>(w, steps, x, x_stride, acc); });
    }
};

struct F32Avx512 {
    static constexpr int64_t kCols = 64;
    static constexpr int kMaxRows = 4;
    static constexpr int64_t kPassRows = 8;

    template <int R>
    static void run_rows(const float* w, int64_t num_k, const float* x, int64_t x_stride, float* acc) {
        __m512 sum[R][4];
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) sum[r][j] = _mm512_loadu_ps(acc + r * kTileOutputs + 16 * j);
        for (int64_t k = 0; k < num_k; ++k) {
            __m512 xk[R];
            for (int r = 0; r < R; ++r) xk[r] = _mm512_set1_ps(x[r * x_stride + k]);
            const float* wk = w + k * kTileOutputs;
            for (int64_t j = 0; j < 4; ++j) {
                __m512 wv = _mm512_loadu_ps(wk + 16 * j);
                for (int r = 0; r < R; ++r) sum[r][j] = _mm512_fmadd_ps(wv, xk[r], sum[r][j]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) _mm512_storeu_ps(acc + r * kTileOutputs + 16 * j, sum[r][j]);
    }

    // rows in [1, kMaxRows]; the tile's 64 outputs are one column slice (col = 0).
    static void run(int rows, const float* w, int64_t steps, const float* x, int64_t x_stride, float* acc,
                    int64_t col, NextChunkPrefetch /*prefetch*/) {
        dispatch_constant<1, 2, 3, 4>(
            rows, [&](auto r) { run_rows<decltype(r)::value>(w, steps, x, x_stride, acc); });
    }
};

// One row (batch-1 decode): kStreams tiles walked in lockstep, so each thread keeps that many
// sequential weight streams in flight; one stream per thread leaves ~40% of the DRAM bandwidth
// unused on this machine class (kernel_bench, lmrun bench's limits).
constexpr int kOneRowStreams = 4;

template <int S>
void one_row_tiles(const uint16_t* first_tile, int64_t tile_elements, const float* x, int64_t in_features,
                   const float* bias, float* y, int64_t out_left) {
    __m512 acc[S][4];
    for (int s = 0; s < S; ++s)
        for (int64_t j = 0; j < 4; ++j) acc[s][j] = _mm512_setzero_ps();
    const __m512i high_half = _mm512_set1_epi32(int32_t(0xffff0000u));
    auto step = [&](int64_t p, __m512 x_even, __m512 x_odd) {
        for (int s = 0; s < S; ++s) {
            const uint16_t* wp = first_tile + s * tile_elements + p * kTileOutputs * 2;
            for (int64_t j = 0; j < 4; ++j) {
                __m512i pairs = _mm512_loadu_si512(wp + 32 * j);
                acc[s][j] =
                    _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16)), x_even, acc[s][j]);
                acc[s][j] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(pairs, high_half)), x_odd,
                                            acc[s][j]);
            }
        }
    };
    const int64_t full_pairs = in_features / 2;
    for (int64_t p = 0; p < full_pairs; ++p) step(p, _mm512_set1_ps(x[2 * p]), _mm512_set1_ps(x[2 * p + 1]));
    // Odd in_features: the last pair's second weight is zero padding, its x would be out of bounds.
    if (in_features % 2) step(full_pairs, _mm512_set1_ps(x[in_features - 1]), _mm512_setzero_ps());
    for (int s = 0; s < S; ++s) {
        const int64_t offset = s * kTileOutputs;
        store_tile_outputs(acc[s], out_left - offset, bias ? bias + offset : nullptr, y + offset);
    }
}

void one_row_bf16(const float* x, const PackedLinear& w, const float* bias, float* y) {
    const auto* data = static_cast<const uint16_t*>(w.data);
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; t += kOneRowStreams) {
            const int64_t n0 = t * kTileOutputs;
            const uint16_t* tile = data + t * w.tile_elements();
            const float* tile_bias = bias ? bias + n0 : nullptr;
            const int64_t out_left = w.out_features - n0;
            const int64_t streams = end - t < kOneRowStreams ? end - t : kOneRowStreams;
            dispatch_constant<1, 2, 3, 4>(streams, [&](auto s) {
                one_row_tiles<decltype(s)::value>(tile, w.tile_elements(), x, w.in_features, tile_bias,
                                                  y + n0, out_left);
            });
        }
    });
}

}  // namespace

void linear_gemv_avx512(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                        float* y) {
    if (w.dtype == DType::BF16 && num_rows == 1) return one_row_bf16(x, w, bias, y);
    if (w.dtype == DType::BF16) {
        gemv_driver<Bf16Avx512, uint16_t>(x, num_rows, w, bias, y);
    } else {
        gemv_driver<F32Avx512, float>(x, num_rows, w, bias, y);
    }
}

}  // namespace lmrun::kernels
