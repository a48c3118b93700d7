// Internal: the ISA-independent loop nest of the GEMV, instantiated by each ISA's translation
// unit with its own micro-kernel. Everything here sits in an anonymous namespace on purpose:
// an inline function compiled once with AVX-512 flags must never be picked by the linker for
// the AVX2 build of the same function.
//
// Loop nest per thread: a group of kStreams tiles (kStreams concurrent weight streams), walked in
// K chunks small enough to stay in L1/L2 while every group of rows (Kernel::kMaxRows) and every
// column slice (Kernel::kCols) reuses them; Kernel::kPassRows rows share one pass over the
// weights. The kernel calls on a chunk prefetch the next chunk, for kernels that do: without
// that, the first pass over a chunk waits on DRAM and the later passes compute with no read in
// flight. Measured on the LM head (311 MB BF16, one thread,
// shared 2-core EPYC): one stream with 16 KiB chunks matched a plain read of the buffer; 2, 4
// and 8 interleaved streams were 10-50% slower, so kStreams = 1 (kept as a tuning knob).
#pragma once

#include <cstdint>

#include "core/parallel.h"
#include "kernels/isa_local_math.h"
#include "kernels/linear_gemv.h"
#include "kernels/next_chunk_prefetch.h"

namespace lmrun::kernels {
namespace {

inline constexpr int64_t kStreams = 1;
inline constexpr int64_t kChunkBytes = 16384;  // of one tile's stream per step

// Kernel provides, for T = uint16_t (BF16 pairs) or float (F32 rows):
//   kCols, kMaxRows, kPassRows and
//   run(rows, const T* w, steps, const float* x, x_stride, float* acc, col, NextChunkPrefetch)
// accumulating acc[r * 64 + col + j] += Σ_step w(step, col + j) · x[r * x_stride + step...];
// the prefetch is this call's share of the next chunk (where the tile's stream continues), for
// kernels that prefetch: the calls over a chunk (every row block and column slice) split it.
template <typename Kernel, typename T>
void gemv_tile_group(const float* x, int64_t num_rows, const PackedLinear& w, int64_t first_tile,
                     int64_t num_group_tiles, const float* bias, float* y) {
    constexpr bool kBf16 = sizeof(T) == 2;
    constexpr int64_t kStepElements = kTileOutputs * (kBf16 ? 2 : 1);  // weights per step
    constexpr int64_t kKPerStep = kBf16 ? 2 : 1;
    constexpr int64_t kChunkSteps = kChunkBytes / (kStepElements * int64_t(sizeof(T)));
    alignas(64) float acc[kStreams][Kernel::kPassRows][kTileOutputs] = {};
    const T* data = static_cast<const T*>(w.data);
    const int64_t full_steps = w.in_features / kKPerStep;

    auto run_steps = [&](int64_t step0, int64_t steps, const float* xs, int64_t x_stride) {
        for (int64_t t = 0; t < num_group_tiles; ++t) {
            const T* wt = data + (first_tile + t) * w.tile_elements() + step0 * kStepElements;
            const NextChunkPrefetch next_chunk = NextChunkPrefetch::whole(wt + steps * kStepElements, steps);
            const int64_t calls =
                (num_rows + Kernel::kMaxRows - 1) / Kernel::kMaxRows * (kTileOutputs / Kernel::kCols);
            int64_t call = 0;
            for (int64_t col = 0; col < kTileOutputs; col += Kernel::kCols) {
                for (int64_t r = 0; r < num_rows; r += Kernel::kMaxRows, ++call) {
                    int rows = int(min_i64(Kernel::kMaxRows, num_rows - r));
                    Kernel::run(rows, wt, steps, xs + r * x_stride, x_stride, &acc[t][r][0], col,
                                next_chunk.pass(call, calls));
                }
            }
        }
    };
    for (int64_t step0 = 0; step0 < full_steps; step0 += kChunkSteps) {
        int64_t steps = min_i64(kChunkSteps, full_steps - step0);
        run_steps(step0, steps, x + step0 * kKPerStep, w.in_features);
    }
    if (kBf16 && (w.in_features % 2) != 0) {
        // Odd in_features: the last pair has one real k; its partner is a zero in the weights
        // but would be out of bounds in x, so feed a padded copy of that last column.
        float tail[Kernel::kPassRows][2];
        for (int64_t r = 0; r < num_rows; ++r) {
            tail[r][0] = x[r * w.in_features + w.in_features - 1];
            tail[r][1] = 0.0f;
        }
        run_steps(full_steps, 1, &tail[0][0], 2);
    }
    for (int64_t t = 0; t < num_group_tiles; ++t) {
        int64_t n0 = (first_tile + t) * kTileOutputs;
        int64_t count = min_i64(kTileOutputs, w.out_features - n0);
        for (int64_t r = 0; r < num_rows; ++r) {
            float* out = y + r * w.out_features + n0;
            for (int64_t j = 0; j < count; ++j) out[j] = acc[t][r][j] + (bias ? bias[n0 + j] : 0.0f);
        }
    }
}

template <typename Kernel, typename T>
void gemv_driver(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    for (int64_t r0 = 0; r0 < num_rows; r0 += Kernel::kPassRows) {
        int64_t rows = min_i64(Kernel::kPassRows, num_rows - r0);
        const float* xr = x + r0 * w.in_features;
        float* yr = y + r0 * w.out_features;
        parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
            for (int64_t t = begin; t < end; t += kStreams) {
                gemv_tile_group<Kernel, T>(xr, rows, w, t, min_i64(kStreams, end - t), bias, yr);
            }
        });
    }
}

}  // namespace
}  // namespace lmrun::kernels
