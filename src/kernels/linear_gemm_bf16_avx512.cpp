// AVX512_BF16 GEMM over the packed BF16 tiles (layout in linear_gemv.h), for batched decode:
// tens of rows, where the F32 GEMV is bound by its FMAs rather than by the weight stream.
//
// x is rounded to BF16 once per call, each thread a share of the rows (parallel_for_after; on
// one thread it held the other waiting: Zen 5, `lmrun bench`, 3 alternating rounds, prefill 128
// 868-873 → 929-936 tok/s in two rounds of three, o_proj and down_proj 3-8% faster at batch 64),
// into the calling thread's buffer laid out as k-pairs, so one 32-bit broadcast feeds a
// vdpbf16ps against 16 output lanes of a tile's k-pair. A micro-tile is
// kRowBlock rows × 64 outputs: 24 zmm accumulators live across the whole K loop, so each step of
// it loads 4 weight vectors and broadcasts kRowBlock activation pairs for 24 dot products. A
// thread walks whole tiles; one tile's weights (K/2 pairs × 256 B, ≤ 384 KiB here) stay in L2
// while every row block passes over them, so DRAM sees each weight byte once per call. Those
// passes also prefetch the thread's next tile into L2 (NextTilePrefetch), so its first pass does
// not wait on DRAM (Zen 5, kernel_bench: 1.24-1.37x at 8-16 rows, 1.07-1.26x at 32).
// The row blocks are near-equal (row_blocks.h): 8 rows as 4+4, not 6+2 (Zen 5, kernel_bench, 7
// alternating rounds: 1.01-1.10x at 8 rows, 1.01-1.21x at 20, 0.97-1.09x at 32, 1.01-1.06x at 64).

#include "kernels/avx512_intrinsics.h"

#include <cstring>

#include "core/parallel.h"
#include "kernels/dispatch_constant.h"
#include "kernels/linear_gemv.h"
#include "kernels/linear_store_avx512.h"
#include "kernels/next_chunk_prefetch.h"
#include "kernels/row_blocks.h"

namespace lmrun::kernels {
namespace {

constexpr int kRowBlock = 6;

// Rounds rows of x to BF16 (nearest even) into [num_rows][padded_in], the padding zeroed: the
// padded weight pairs are zero too, and 0 · 0 keeps the padding out of the sums.
void round_rows_to_bf16(const float* x, int64_t num_rows, int64_t in_features, int64_t padded_in,
                        uint16_t* out) {
    for (int64_t r = 0; r < num_rows; ++r) {
        const float* src = x + r * in_features;
        uint16_t* dst = out + r * padded_in;
        int64_t k = 0;
        for (; k + 16 <= in_features; k += 16) {
            __m256bh packed = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + k));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), reinterpret_cast<__m256i&>(packed));
        }
        if (k < padded_in) {
            __mmask16 tail = __mmask16((1u << (in_features - k < 16 ? in_features - k : 16)) - 1);
            for (; k < padded_in; k += 16) {
                __m512 values = _mm512_maskz_loadu_ps(k < in_features ? tail : 0, src + k);
                __m256bh packed = _mm512_cvtneps_pbh(values);
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), reinterpret_cast<__m256i&>(packed));
                tail = 0;
            }
        }
    }
}

// acc rows r < R, outputs 64 of one tile: Σ over pairs p of w[p][lane][2] · x[r][2p..2p+1].
template <int R>
void micro_tile(const uint16_t* tile, int64_t num_pairs, const uint16_t* x, int64_t x_stride, float* y,
                int64_t y_stride, int64_t count, const float* bias, NextTilePrefetch& prefetch) {
    __m512 acc[R][4];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
    const int32_t* x_pairs = reinterpret_cast<const int32_t*>(x);
    const int64_t pair_stride = x_stride / 2;
    for (int64_t p = 0; p < num_pairs; ++p) {
        const uint16_t* wp = tile + p * kTileOutputs * 2;
        prefetch.step();
        __m512bh w[4];
        for (int64_t j = 0; j < 4; ++j) w[j] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(wp + 32 * j));
        for (int r = 0; r < R; ++r) {
            __m512bh xr = reinterpret_cast<__m512bh>(_mm512_set1_epi32(x_pairs[r * pair_stride + p]));
            for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], w[j], xr);
        }
    }
    for (int r = 0; r < R; ++r) store_tile_outputs(acc[r], count, bias, y + r * y_stride);
}

void run_row_block(int rows, const uint16_t* tile, int64_t num_pairs, const uint16_t* x, int64_t x_stride,
                   float* y, int64_t y_stride, int64_t count, const float* bias, NextTilePrefetch& prefetch) {
    dispatch_constant<1, 2, 3, 4, 5, 6>(rows, [&](auto r) {
        micro_tile<decltype(r)::value>(tile, num_pairs, x, x_stride, y, y_stride, count, bias, prefetch);
    });
}

}  // namespace

void linear_gemm_bf16_avx512(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                             float* y) {
    // Grows to the largest batch seen and is then reused; the model runner reserves it for its
    // largest decode batch at start-up, so decode steps do not allocate.
    uint16_t* xb = gemm_bf16_x_buffer(size_t(num_rows * w.padded_in));
    const auto* data = static_cast<const uint16_t*>(w.data);
    const int64_t num_pairs = w.padded_in / 2;
    const int64_t tile_bytes = w.tile_elements() * int64_t(sizeof(uint16_t));
    const RowBlocks blocks(num_rows, kRowBlock);
    const int64_t steps = blocks.count * num_pairs;
    // Each thread rounds its share of the rows; every thread then reads all of them.
    const auto round_rows = [&](int64_t begin, int64_t end) {
        round_rows_to_bf16(x + begin * w.in_features, end - begin, w.in_features, w.padded_in,
                           xb + begin * w.padded_in);
    };
    parallel_for_after(num_rows, round_rows, w.num_tiles, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            const uint16_t* tile = data + t * w.tile_elements();
            NextTilePrefetch prefetch(t + 1 < end ? tile + w.tile_elements() : nullptr, tile_bytes, steps);
            int64_t n0 = t * kTileOutputs;
            int64_t count = w.out_features - n0 < kTileOutputs ? w.out_features - n0 : kTileOutputs;
            for (int64_t b = 0; b < blocks.count; ++b) {
                const int64_t r = blocks.first_row(b);
                run_row_block(int(blocks.rows(b)), tile, num_pairs, xb + r * w.padded_in, w.padded_in,
                              y + r * w.out_features + n0, w.out_features, count, bias ? bias + n0 : nullptr,
                              prefetch);
            }
        }
    });
}

}  // namespace lmrun::kernels
