// AVX2 GEMV micro-kernels over the packed tiles (layout in linear_gemv.h). With 16 ymm
// registers a call covers part of a tile for a few rows; the chunk (then hot in L1/L2) is
// re-walked for the other outputs and further rows. One row on BF16 weights (batch-1 decode) has
// its own kernel: two weight streams per tile (one_row_bf16_avx2, below).
#include <immintrin.h>

#include <cstring>

#include "kernels/linear_gemv.h"
#include "kernels/linear_gemv_driver.h"
#include "kernels/next_chunk_prefetch.h"

namespace lmrun::kernels {
namespace {

// BF16 weights: each 32-byte load holds 8 outputs x 2 k. Unpacking it against zero (vpunpck{l,h}wd,
// a shuffle, off the two ports the FMAs and shifts share) gives the F32 weights in k-interleaved
// order: lo = (n0 k0, n0 k1, n1 k0, n1 k1 | n4 .., n5 ..), hi = (n2, n3 | n6, n7). One 64-bit
// broadcast of (x[k0], x[k1]) multiplies both, so each row keeps an even/odd-interleaved pair of
// accumulators per 8 outputs, and a horizontal add (once per chunk) puts them back in output
// order. A call walks the whole tile, G groups of 8 outputs at a time, with at most 12
// accumulators (one and two rows: `shifted`, below). Up to 48 rows share one
// pass over the weights; the dispatch hands more than 64 rows to the AVX2 GEMM (linear.h says
// why at kAvx2GemmMinRows).
// The passes over a chunk prefetch the next one into L2 (NextChunkPrefetch), so that DRAM reads
// overlap the FMAs. One row, 2 threads, kernel_bench on Sapphire
// Rapids at LMRUN_ISA=avx2: 1.3-1.6x the GB/s of the previous kernel (half tiles, no prefetch) on
// the Qwen3-0.6B shapes.
struct Bf16Avx2 {
    static_assert(kTileOutputs * 2 * sizeof(uint16_t) == NextChunkPrefetch::kStepBytes);
    static constexpr int64_t kCols = kTileOutputs;
    static constexpr int kMaxRows = 6;
    static constexpr int64_t kPassRows = 48;
    static constexpr int64_t kGroups = kTileOutputs / 8;
    // Issues this pass's share of the next chunk's lines as it walks: prefetch.step, or step_range
    // every kSparseStepGroup steps where the share is sparse() (every block pass from 3 rows up:
    // 8 passes share it). Against a share worked out at every step, Zen 3, weights from DRAM, both
    // versions in one process, alternating (40 pairs, medians): 0.99-1.10x at 8-64 rows on
    // Qwen3-0.6B's qkv, gate_up and down shapes (1.05x at 32 rows).
    template <int R, int G>
    static void block(const uint16_t* w, int64_t num_pairs, const float* x, int64_t x_stride, float* acc,
                      int64_t g0, NextChunkPrefetch prefetch) {
        __m256 lo[R][G], hi[R][G];
        for (int r = 0; r < R; ++r)
            for (int g = 0; g < G; ++g) lo[r][g] = hi[r][g] = _mm256_setzero_ps();
        const auto step = [&](int64_t p) {
            const uint16_t* wp = w + p * kTileOutputs * 2 + 16 * g0;
            __m256 w_lo[G], w_hi[G];
            for (int64_t g = 0; g < G; ++g) {
                const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 16 * g));
                w_lo[g] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), pairs));
                w_hi[g] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), pairs));
            }
            for (int r = 0; r < R; ++r) {
                int64_t x_pair;
                std::memcpy(&x_pair, x + r * x_stride + 2 * p, sizeof(x_pair));
                const __m256 xb = _mm256_castsi256_ps(_mm256_set1_epi64x(x_pair));
                for (int g = 0; g < G; ++g) {
                    lo[r][g] = _mm256_fmadd_ps(w_lo[g], xb, lo[r][g]);
                    hi[r][g] = _mm256_fmadd_ps(w_hi[g], xb, hi[r][g]);
                }
            }
        };
        constexpr int64_t kGroup = NextChunkPrefetch::kSparseStepGroup;
        int64_t p = 0;
        if (prefetch.sparse()) {
            for (; p + kGroup <= num_pairs; p += kGroup) {
                prefetch.step_range(p, p + kGroup);
                for (int64_t q = p; q < p + kGroup; ++q) step(q);
            }
        }
        for (; p < num_pairs; ++p) {
            prefetch.step(p);
            step(p);
        }
        for (int r = 0; r < R; ++r) {
            for (int g = 0; g < G; ++g) {
                float* out = acc + r * kTileOutputs + 8 * (g0 + g);
                _mm256_storeu_ps(out,
                                 _mm256_add_ps(_mm256_loadu_ps(out), _mm256_hadd_ps(lo[r][g], hi[r][g])));
            }
        }
    }

    // One or two rows: fewer passes over the chunk matter more there than the shuffle port, so the
    // pairs are split by shift and mask (x as even and odd broadcasts) and the R x G accumulators
    // hold outputs in order: one row takes the whole tile per pass, two rows half of it (kernel_bench,
    // 2 rows: 21-22 GB/s against 17-19 with the unpacking block's four passes).
    template <int R, int G>
    static void shifted(const uint16_t* w, int64_t num_pairs, const float* x, int64_t x_stride, float* acc,
                        int64_t g0, NextChunkPrefetch prefetch) {
        __m256 sum[R][G];
        for (int r = 0; r < R; ++r)
            for (int g = 0; g < G; ++g) sum[r][g] = _mm256_loadu_ps(acc + r * kTileOutputs + 8 * (g0 + g));
        const __m256i high_half = _mm256_set1_epi32(int32_t(0xffff0000u));
        for (int64_t p = 0; p < num_pairs; ++p) {
            const uint16_t* wp = w + p * kTileOutputs * 2 + 16 * g0;
            prefetch.step(p);
            __m256 x_even[R], x_odd[R];
            for (int r = 0; r < R; ++r) {
                x_even[r] = _mm256_broadcast_ss(x + r * x_stride + 2 * p);
                x_odd[r] = _mm256_broadcast_ss(x + r * x_stride + 2 * p + 1);
            }
            for (int64_t g = 0; g < G; ++g) {
                const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 16 * g));
                const __m256 w_even = _mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16));
                const __m256 w_odd = _mm256_castsi256_ps(_mm256_and_si256(pairs, high_half));
                for (int r = 0; r < R; ++r) {
                    sum[r][g] = _mm256_fmadd_ps(w_even, x_even[r], sum[r][g]);
                    sum[r][g] = _mm256_fmadd_ps(w_odd, x_odd[r], sum[r][g]);
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int g = 0; g < G; ++g) _mm256_storeu_ps(acc + r * kTileOutputs + 8 * (g0 + g), sum[r][g]);
    }

    // All kGroups groups of the tile, G at a time, this call's prefetches of the next chunk
    // spread over the passes (next_chunk_prefetch.h says why).
    template <int R, int G, bool kShifted = false>
    static void tile(const uint16_t* w, int64_t num_pairs, const float* x, int64_t x_stride, float* acc,
                     NextChunkPrefetch prefetch) {
        constexpr int kPasses = int(kGroups / G);
        for (int pass = 0; pass < kPasses; ++pass) {
            if constexpr (kShifted) {
                shifted<R, G>(w, num_pairs, x, x_stride, acc, pass * G, prefetch.pass(pass, kPasses));
            } else {
                block<R, G>(w, num_pairs, x, x_stride, acc, pass * G, prefetch.pass(pass, kPasses));
            }
        }
    }

    // rows in [1, kMaxRows]; the tile's 64 outputs are one column slice (col = 0).
    static void run(int rows, const uint16_t* w, int64_t steps, const float* x, int64_t x_stride, float* acc,
                    int64_t /*col*/, NextChunkPrefetch prefetch) {
        switch (rows) {
            case 1:
                return tile<1, 8, true>(w, steps, x, x_stride, acc, prefetch);
            case 2:
                return tile<2, 4, true>(w, steps, x, x_stride, acc, prefetch);
            case 3:
                return tile<3, 1>(w, steps, x, x_stride, acc, prefetch);
            case 4:
                return tile<4, 1>(w, steps, x, x_stride, acc, prefetch);
            case 5:
                return tile<5, 1>(w, steps, x, x_stride, acc, prefetch);
            default:
                return tile<6, 1>(w, steps, x, x_stride, acc, prefetch);
        }
    }
};

struct F32Avx2 {
    static constexpr int64_t kCols = 32;
    static constexpr int kMaxRows = 2;
    static constexpr int64_t kPassRows = 8;

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
                    int64_t col, NextChunkPrefetch /*prefetch*/) {
        w += col;
        acc += col;
        if (rows == 1) return run_rows<1>(w, steps, x, x_stride, acc);
        run_rows<2>(w, steps, x, x_stride, acc);
    }
};

// One row (batch-1 decode): each tile's k pairs are cut into two equal parts walked in lockstep
// into the same 8 sums (`shifted`'s arithmetic), two sequential weight streams per thread with no
// more accumulators; no software prefetch (the int8 one-row kernel, linear_int8_avx2.cpp, says
// why). In place of the driver's chunked walk with `shifted<1, 8>`, Zen 3: kernel_bench, 5
// alternating rounds, medians per projection 0.99-1.59x (the LM head 1.42x), 4 streams 0.97-1.2x;
// `lmrun bench`, BF16 weights, 6 alternating rounds, decode batch 1 1.22x at 128 tokens of
// context, 1.17x at 1024.
constexpr int kBf16OneRowStreams = 2;

void one_row_bf16_tile(const uint16_t* tile, const float* x, int64_t in_features, float* sums) {
    __m256 sum[8];
    for (__m256& s : sum) s = _mm256_setzero_ps();
    const __m256i high_half = _mm256_set1_epi32(int32_t(0xffff0000u));
    const auto step = [&](int64_t p, __m256 x_even, __m256 x_odd) {
        const uint16_t* wp = tile + p * kTileOutputs * 2;
        for (int64_t g = 0; g < 8; ++g) {
            const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 16 * g));
            sum[g] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(pairs, 16)), x_even, sum[g]);
            sum[g] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(pairs, high_half)), x_odd, sum[g]);
        }
    };
    const int64_t full_pairs = in_features / 2;
    const int64_t part = full_pairs / kBf16OneRowStreams;
    for (int64_t p = 0; p < part; ++p) {
        for (int s = 0; s < kBf16OneRowStreams; ++s) {
            const int64_t pair = s * part + p;
            step(pair, _mm256_broadcast_ss(x + 2 * pair), _mm256_broadcast_ss(x + 2 * pair + 1));
        }
    }
    for (int64_t p = kBf16OneRowStreams * part; p < full_pairs; ++p)
        step(p, _mm256_broadcast_ss(x + 2 * p), _mm256_broadcast_ss(x + 2 * p + 1));
    // Odd in_features: the last pair's second weight is zero padding, its x would be out of bounds.
    if (in_features % 2) step(full_pairs, _mm256_broadcast_ss(x + in_features - 1), _mm256_setzero_ps());
    for (int64_t g = 0; g < 8; ++g) _mm256_storeu_ps(sums + 8 * g, sum[g]);
}

void one_row_bf16_avx2(const float* x, const PackedLinear& w, const float* bias, float* y) {
    const auto* data = static_cast<const uint16_t*>(w.data);
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        alignas(32) float sums[kTileOutputs];
        for (int64_t t = begin; t < end; ++t) {
            one_row_bf16_tile(data + t * w.tile_elements(), x, w.in_features, sums);
            const int64_t n0 = t * kTileOutputs;
            const int64_t count = min_i64(kTileOutputs, w.out_features - n0);
            for (int64_t j = 0; j < count; ++j) y[n0 + j] = sums[j] + (bias ? bias[n0 + j] : 0.0f);
        }
    });
}

}  // namespace

void linear_gemv_avx2(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    if (w.dtype == DType::BF16) {
        if (num_rows == 1) return one_row_bf16_avx2(x, w, bias, y);
        gemv_driver<Bf16Avx2, uint16_t>(x, num_rows, w, bias, y);
    } else {
        gemv_driver<F32Avx2, float>(x, num_rows, w, bias, y);
    }
}

}  // namespace lmrun::kernels
