// AVX2 GEMM over the packed tiles (layout in linear_gemv.h) for more rows than the GEMV serves
// (prefill and decode batches over 64: kAvx2GemmMinRows) on CPUs without a BF16 dot product
// (AMD Zen 3). The GEMV walks the whole weight matrix again for every 48 rows, so a prefill of
// 512 reads the weights 11 times; here each 64-output tile is read once per call: a thread
// widens kChunkK rows of k of its tile to F32 (BF16 storage; F32 tiles are read as they are)
// into a buffer in L2, and every group of kBlockRows rows then runs a kBlockRows x 16 FMA
// micro-kernel over it, one 16-output slice (kChunkK x 64 B) after another (12 accumulators:
// the two FMA pipes, not the loads, are the limit). x stays in F32, so the results have the
// GEMV's F32 accuracy. Rows are taken kPanelRows at a time: later panels re-read the tile from
// L2. Allocation-free (the widened chunk lives on the stack).
//
// kChunkK 256 rather than 64: a micro-kernel call loads and stores its 12 accumulators once per
// chunk, and those were the largest overhead left. Zen 4 at LMRUN_ISA=avx2, kernel_bench, 3
// alternating rounds: 512 rows 4-10% faster per projection, 64 rows 1-6%. Walking the
// 16-output slices outermost (each slice then stays in L1 for all row blocks) was 2-5% slower.
#include <immintrin.h>

#include "core/parallel.h"
#include "kernels/isa_local_math.h"
#include "kernels/linear_gemv.h"
#include "kernels/row_blocks.h"

namespace lmrun::kernels {
namespace {

constexpr int64_t kChunkK = 256;    // k rows widened at a time: 256 x 64 F32 = 64 KiB
constexpr int64_t kBlockRows = 6;   // rows of the micro-kernel
constexpr int64_t kPanelRows = 96;  // rows per pass over a tile
constexpr int64_t kBlockCols = 16;  // outputs of the micro-kernel (two ymm)

// Lanes [0, count) of 8 set, for masked loads and stores of a partial output block.
__m256i lane_mask(int64_t count) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(count)), lanes);
}

// y[r][0, 16) (+)= Σ_k w[k][0, 16) · x[r][k] for R rows; `first`: start from the bias (or 0)
// instead of y. Lanes at or past `count` are neither read nor written. Whole blocks load and
// store y unmasked: AMD cores run vmaskmovps stores slowly enough that masked accumulator
// traffic took a third of the FMA rate on Zen 4 (kChunkK 64); only a partial last block masks.
template <int R, bool kMasked>
void block_kernel_impl(const float* w, int64_t kc, const float* x, int64_t x_stride, float* y,
                       int64_t y_stride, bool first, const float* bias, int64_t count) {
    const __m256i mask0 = lane_mask(count), mask1 = lane_mask(count - 8);
    const auto load = [&](const float* p, __m256i mask) {
        return kMasked ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
    };
    __m256 acc[R][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        if (first) {
            acc[r][0] = bias ? load(bias, mask0) : _mm256_setzero_ps();
            acc[r][1] = bias ? load(bias + 8, mask1) : _mm256_setzero_ps();
        } else {
            acc[r][0] = load(y + r * y_stride, mask0);
            acc[r][1] = load(y + r * y_stride + 8, mask1);
        }
    }
    for (int64_t k = 0; k < kc; ++k) {
        const __m256 w0 = _mm256_load_ps(w + k * kTileOutputs);
        const __m256 w1 = _mm256_load_ps(w + k * kTileOutputs + 8);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 xb = _mm256_broadcast_ss(x + r * x_stride + k);
            acc[r][0] = _mm256_fmadd_ps(w0, xb, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(w1, xb, acc[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        if constexpr (kMasked) {
            _mm256_maskstore_ps(y + r * y_stride, mask0, acc[r][0]);
            _mm256_maskstore_ps(y + r * y_stride + 8, mask1, acc[r][1]);
        } else {
            _mm256_storeu_ps(y + r * y_stride, acc[r][0]);
            _mm256_storeu_ps(y + r * y_stride + 8, acc[r][1]);
        }
    }
}

template <int R>
void block_kernel(const float* w, int64_t kc, const float* x, int64_t x_stride, float* y, int64_t y_stride,
                  bool first, const float* bias, int64_t count) {
    if (count >= kBlockCols)
        block_kernel_impl<R, false>(w, kc, x, x_stride, y, y_stride, first, bias, count);
    else
        block_kernel_impl<R, true>(w, kc, x, x_stride, y, y_stride, first, bias, count);
}

using BlockKernel = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool,
                             const float*, int64_t);
constexpr BlockKernel kBlockKernels[kBlockRows + 1] = {nullptr,         block_kernel<1>, block_kernel<2>,
                                                       block_kernel<3>, block_kernel<4>, block_kernel<5>,
                                                       block_kernel<6>};

// Rows [2p0, 2p0 + 2·pairs) of k of a BF16 tile as F32 [k][64] (even k: the low halves of the
// pairs, odd k: the high halves).
void widen_bf16_chunk(const uint16_t* tile, int64_t p0, int64_t pairs, float* out) {
    const __m256i high_half = _mm256_set1_epi32(int32_t(0xffff0000u));
    for (int64_t p = 0; p < pairs; ++p) {
        const uint16_t* src = tile + (p0 + p) * kTileOutputs * 2;
        float* even = out + 2 * p * kTileOutputs;
        float* odd = even + kTileOutputs;
        for (int64_t g = 0; g < kTileOutputs / 8; ++g) {
            const __m256i both = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 16 * g));
            _mm256_store_ps(even + 8 * g, _mm256_castsi256_ps(_mm256_slli_epi32(both, 16)));
            _mm256_store_ps(odd + 8 * g, _mm256_castsi256_ps(_mm256_and_si256(both, high_half)));
        }
    }
}

// Rows [row_begin, row_end) of y for weight tile t.
void gemm_tile(const float* x, int64_t row_begin, int64_t row_end, const PackedLinear& w, int64_t t,
               const float* bias, float* y) {
    alignas(64) float widened[kChunkK * kTileOutputs];
    const int64_t n0 = t * kTileOutputs;
    const int64_t count = min_i64(kTileOutputs, w.out_features - n0);
    const bool bf16 = w.dtype == DType::BF16;
    const RowBlocks blocks(row_end - row_begin, kBlockRows);  // near-equal (row_blocks.h)
    for (int64_t k0 = 0; k0 < w.in_features; k0 += kChunkK) {
        const int64_t kc = min_i64(kChunkK, w.in_features - k0);
        const float* chunk = nullptr;
        if (bf16) {
            widen_bf16_chunk(static_cast<const uint16_t*>(w.data) + t * w.tile_elements(), k0 / 2,
                             (kc + 1) / 2, widened);
            chunk = widened;
        } else {
            chunk = static_cast<const float*>(w.data) + t * w.tile_elements() + k0 * kTileOutputs;
        }
        for (int64_t b = 0; b < blocks.count; ++b) {
            const int64_t r = row_begin + blocks.first_row(b), rows = blocks.rows(b);
            for (int64_t col = 0; col < count; col += kBlockCols) {
                kBlockKernels[rows](chunk + col, kc, x + r * w.in_features + k0, w.in_features,
                                    y + r * w.out_features + n0 + col, w.out_features, k0 == 0,
                                    bias ? bias + n0 + col : nullptr, count - col);
            }
        }
    }
}

}  // namespace

void linear_gemm_avx2(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            for (int64_t r = 0; r < num_rows; r += kPanelRows)
                gemm_tile(x, r, min_i64(num_rows, r + kPanelRows), w, t, bias, y);
        }
    });
}

}  // namespace lmrun::kernels
