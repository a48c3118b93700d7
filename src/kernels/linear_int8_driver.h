// Internal: the ISA-independent loop nest of the int8 linear kernels (layout and arithmetic in
// linear_int8.h), instantiated by each ISA's translation unit with its own micro-kernel.
// Everything sits in an anonymous namespace so an AVX-512 instantiation is never linked into
// an AVX2 caller.
//
// x is quantized once per call (all rows), each thread a share of the rows before any thread
// reads them (parallel_for_after): on one thread, while the other waited, it cost 7, 14 and 21 us
// at 64 rows of 1024, 2048 and 3072 (Zen 5, AVX2 quantizer, data in cache); `lmrun bench`, int8
// weights, 3 alternating rounds: batch 64 decode 822-837 → 845-853 tok/s, prefill 128 1339-1368
// → 1395-1405 tok/s. A thread walks whole weight tiles; a tile is walked in chunks of
// kInt8ChunkQuads k-quads (16 KiB of weights) that stay in L1 while every row passes over them,
// so each weight byte comes from DRAM once per call whatever the row count.
// The int32 sums of a tile live in a per-thread buffer [num_rows][64] until the tile ends.
#pragma once

#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "kernels/linear_int8.h"
#include "kernels/next_chunk_prefetch.h"
#include "kernels/row_blocks.h"

namespace lmrun::kernels {
namespace {

inline int64_t int8_min(int64_t a, int64_t b) {
    return a < b ? a : b;
}

inline constexpr int64_t kInt8ChunkQuads = 64;  // 16 KiB of one tile's weights
static_assert(kInt8QuadBytes == NextChunkPrefetch::kStepBytes);

// Sums of a tile → y: removes the unsigned-x offset, applies both scales, adds the bias.
template <bool kUnsignedX>
void dequantize_tile(const int32_t* acc, int64_t num_rows, const float* x_scales, const PackedLinear& w,
                     int64_t tile, const float* bias, float* y) {
    const int64_t n0 = tile * kTileOutputs;
    const int64_t count = int8_min(kTileOutputs, w.out_features - n0);
    const float* w_scales = w.scales + n0;
    const int32_t* compensation = w.compensation + n0;
    for (int64_t r = 0; r < num_rows; ++r) {
        float* out = y + r * w.out_features + n0;
        const int32_t* sums = acc + r * kTileOutputs;
        const float x_scale = x_scales[r];
        for (int64_t j = 0; j < count; ++j) {
            const int32_t sum = kUnsignedX ? sums[j] - compensation[j] : sums[j];
            out[j] = float(sum) * (x_scale * w_scales[j]) + (bias ? bias[n0 + j] : 0.0f);
        }
    }
}

// Kernel provides kCols (outputs per call), kMaxRows, kUnsignedX, kMinCallsToPrefetch (below
// that many calls per chunk, the calls get no prefetch to issue) and
//   run(rows, const int8_t* w, quads, const uint8_t* x, x_stride, int32_t* acc, NextChunkPrefetch)
// adding Σ over `quads` k-quads of x[r] · w to acc[r * 64 + j], j < kCols (w and acc already
// point at the column slice, x at the chunk's first k), and calling prefetch.step(p) for each
// quad p it walks (or prefetch.pass(...).step(p) when it walks the chunk several times); the
// calls over a chunk share the prefetch of the next one (next_chunk_prefetch.h).
template <typename Kernel>
void int8_tile(const uint8_t* xq, int64_t num_rows, const PackedLinear& w, int64_t tile, int32_t* acc) {
    const int8_t* weights = static_cast<const int8_t*>(w.data) + tile * w.tile_elements();
    for (int64_t i = 0; i < num_rows * kTileOutputs; ++i) acc[i] = 0;
    const int64_t quads = w.padded_in / 4;
    // Near-equal row blocks from three on (Zen 5, VNNI, kernel_bench, 7 alternating rounds:
    // 1.03-1.08x at 20 rows, 1.07-1.10x at 32, 1.02-1.09x at 64). Two blocks keep the first full:
    // at 7-10 rows, where the weights come from DRAM as the first block walks them, 4+3 / 4+4 /
    // 5+5 ran at 0.83-1.02x of 6+1 / 6+2 / 6+4 (9 rounds).
    const RowBlocks blocks(num_rows, Kernel::kMaxRows, /*balance_from=*/3);
    const int64_t calls = blocks.count * (kTileOutputs / Kernel::kCols);
    for (int64_t q0 = 0; q0 < quads; q0 += kInt8ChunkQuads) {
        const int64_t steps = int8_min(kInt8ChunkQuads, quads - q0);
        const NextChunkPrefetch next_chunk = NextChunkPrefetch::whole(
            calls >= Kernel::kMinCallsToPrefetch ? weights + (q0 + steps) * kInt8QuadBytes : nullptr, steps);
        int64_t call = 0;
        for (int64_t b = 0; b < blocks.count; ++b) {
            const int64_t r = blocks.first_row(b);
            const int rows = int(blocks.rows(b));
            for (int64_t col = 0; col < kTileOutputs; col += Kernel::kCols, ++call) {
                Kernel::run(rows, weights + q0 * kInt8QuadBytes + col * 4, steps,
                            xq + r * w.padded_in + q0 * 4, w.padded_in, acc + r * kTileOutputs + col,
                            next_chunk.pass(call, calls));
            }
        }
    }
}

template <typename Kernel>
void int8_driver(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    uint8_t* xq = int8_x_buffer(size_t(num_rows * w.padded_in));
    float* scales = int8_x_scale_buffer(size_t(num_rows));
    // Each thread quantizes its share of the rows; every thread then reads all of them.
    const auto quantize_rows = [&](int64_t begin, int64_t end) {
        quantize_rows_int8(x + begin * w.in_features, end - begin, w.in_features, w.padded_in,
                           Kernel::kUnsignedX, xq + begin * w.padded_in, scales + begin);
    };
    parallel_for_after(num_rows, quantize_rows, w.num_tiles, [&](int64_t begin, int64_t end) {
        int32_t* acc = int8_sum_buffer(size_t(num_rows * kTileOutputs));
        for (int64_t t = begin; t < end; ++t) {
            int8_tile<Kernel>(xq, num_rows, w, t, acc);
            dequantize_tile<Kernel::kUnsignedX>(acc, num_rows, scales, w, t, bias, y);
        }
    });
}

}  // namespace
}  // namespace lmrun::kernels
