// AMX-BF16 GEMM over the packed BF16 tiles (layout in linear_gemv.h), for batched decode and
// prefill where the CPU has AMX (Sapphire Rapids). Allocation-free after the first call with a
// given row count, so decode plans can use it.
//
// The packed layout already is AMX's: one k-pair of a 64-output weight tile is 256 bytes
// (64 lanes × 2 BF16), so a B tile (16 k-pairs × 16 outputs, 64 bytes a row) is read straight
// from the packed weight with a 256-byte row stride. x is rounded to BF16 once per call into a
// per-thread buffer of rows padded to a multiple of 32 (the pad rows' results are dropped).
// Tiles (all 16 rows × 64 bytes, one configuration):
//   rows ≤ 16: C0..C3 = one 16-row block × 64 outputs, A = tmm4, B = tmm5/tmm6 in turn
//   more:      C0..C3 = 2 × 2 blocks of 16 rows × 16 outputs (32 rows × 32 outputs), A = tmm4/5,
//              B = tmm6/7: each loaded tile feeds two dot products.
// A thread walks whole weight tiles; a tile's weights stay in L2 while every row block passes
// over them, so DRAM sees each weight byte once per call (per row panel for long prefills).

#include "kernels/avx512_intrinsics.h"

#include <vector>

#include "core/parallel.h"
#include "kernels/linear_amx.h"
#include "kernels/linear_gemv.h"
#include "kernels/next_chunk_prefetch.h"

namespace lmrun::kernels {
namespace {

constexpr int64_t kPairsPerStep = 16;              // k-pairs of a B tile (32 k of BF16)
constexpr int64_t kPanelBytes = int64_t(1) << 20;  // x rows handled per pass over the weights

inline int64_t min_i64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

// Rounds rows of x to BF16 into [num_rows][padded_in], the k padding zeroed (the padded weight
// pairs are zero too).
void round_rows_to_bf16(const float* x, int64_t row_begin, int64_t row_end, int64_t in_features,
                        int64_t padded_in, uint16_t* out) {
    for (int64_t r = row_begin; r < row_end; ++r) {
        const float* src = x + r * in_features;
        uint16_t* dst = out + r * padded_in;
        for (int64_t k = 0; k < padded_in; k += 16) {
            int64_t left = in_features - k;
            __mmask16 mask = left >= 16 ? __mmask16(0xffff) : left > 0 ? __mmask16((1u << left) - 1) : 0;
            __m256bh packed = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, src + k));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), reinterpret_cast<__m256i&>(packed));
        }
    }
}

// y rows [0, rows) × outputs [0, count) of a C block held in `c` ([16][c_stride] floats), + bias.
void store_block(const float* c, int64_t c_stride, int64_t rows, int64_t count, const float* bias, float* y,
                 int64_t y_stride) {
    if (count <= 0) return;
    const __mmask16 mask = count >= 16 ? __mmask16(0xffff) : __mmask16((1u << count) - 1);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; ++r)
        _mm512_mask_storeu_ps(y + r * y_stride, mask, _mm512_add_ps(_mm512_loadu_ps(c + r * c_stride), b));
}

// One 16-row block × the tile's 64 outputs.
void tile_rows16(const uint16_t* tile, int64_t num_pairs, const uint16_t* x, int64_t x_stride_bytes,
                 float* c_buffer, NextTilePrefetch& prefetch) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t p = 0; p < num_pairs; p += kPairsPerStep) {
        const uint16_t* wp = tile + p * kTileOutputs * 2;
        prefetch.step();
        _tile_loadd(4, x + 2 * p, x_stride_bytes);
        _tile_loadd(5, wp, 256);
        _tile_dpbf16ps(0, 4, 5);
        _tile_loadd(6, wp + 32, 256);
        _tile_dpbf16ps(1, 4, 6);
        _tile_loadd(5, wp + 64, 256);
        _tile_dpbf16ps(2, 4, 5);
        _tile_loadd(6, wp + 96, 256);
        _tile_dpbf16ps(3, 4, 6);
    }
    _tile_stored(0, c_buffer, 256);
    _tile_stored(1, c_buffer + 16, 256);
    _tile_stored(2, c_buffer + 32, 256);
    _tile_stored(3, c_buffer + 48, 256);
}

// Two 16-row blocks × outputs [32h, 32h + 32) of the tile.
void tile_rows32(const uint16_t* tile, int64_t num_pairs, const uint16_t* x, int64_t x_stride_bytes,
                 int64_t h, float* c_buffer, NextTilePrefetch& prefetch) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const uint16_t* x_low = x;
    const uint16_t* x_high = x + kAmxRows * (x_stride_bytes / 2);
    for (int64_t p = 0; p < num_pairs; p += kPairsPerStep) {
        const uint16_t* wp = tile + p * kTileOutputs * 2 + 64 * h;
        prefetch.step();
        _tile_loadd(4, x_low + 2 * p, x_stride_bytes);
        _tile_loadd(6, wp, 256);
        _tile_loadd(5, x_high + 2 * p, x_stride_bytes);
        _tile_loadd(7, wp + 32, 256);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    // c_buffer: [32 rows][32 outputs]
    _tile_stored(0, c_buffer, 128);
    _tile_stored(1, c_buffer + 16, 128);
    _tile_stored(2, c_buffer + std::ptrdiff_t{16} * 32, 128);
    _tile_stored(3, c_buffer + std::ptrdiff_t{16} * 32 + 16, 128);
}

// Rows [row_begin, row_end) of x (already in BF16) against weight tiles [tile_begin, tile_end).
void gemm_tiles(const uint16_t* xb, int64_t row_begin, int64_t row_end, const PackedLinear& w,
                int64_t tile_begin, int64_t tile_end, const float* bias, float* y) {
    alignas(64) float c_buffer[32 * 64];
    const auto* data = static_cast<const uint16_t*>(w.data);
    const int64_t num_pairs = w.padded_in / 2;
    const int64_t x_stride_bytes = w.padded_in * 2;
    const int64_t rows = row_end - row_begin;
    const int64_t tile_bytes = w.tile_elements() * 2;
    const int64_t steps = amx_passes_per_tile(rows) * (num_pairs / kPairsPerStep);
    for (int64_t t = tile_begin; t < tile_end; ++t) {
        const uint16_t* tile = data + t * w.tile_elements();
        NextTilePrefetch prefetch(t + 1 < tile_end ? tile + w.tile_elements() : nullptr, tile_bytes, steps);
        const int64_t n0 = t * kTileOutputs;
        const int64_t count = min_i64(kTileOutputs, w.out_features - n0);
        const float* tile_bias = bias ? bias + n0 : nullptr;
        if (rows <= kAmxRows) {
            tile_rows16(tile, num_pairs, xb + row_begin * w.padded_in, x_stride_bytes, c_buffer, prefetch);
            for (int64_t j = 0; j < 4; ++j)
                store_block(c_buffer + 16 * j, 64, rows, count - 16 * j,
                            tile_bias ? tile_bias + 16 * j : nullptr,
                            y + row_begin * w.out_features + n0 + 16 * j, w.out_features);
            continue;
        }
        for (int64_t r = row_begin; r < row_end; r += 2 * kAmxRows) {
            const int64_t block_rows = min_i64(2 * kAmxRows, row_end - r);
            for (int64_t h = 0; h < 2; ++h) {
                tile_rows32(tile, num_pairs, xb + r * w.padded_in, x_stride_bytes, h, c_buffer, prefetch);
                for (int64_t j = 0; j < 2; ++j) {
                    const int64_t col = 32 * h + 16 * j;
                    store_block(c_buffer + 16 * j, 32, block_rows, count - col,
                                tile_bias ? tile_bias + col : nullptr, y + r * w.out_features + n0 + col,
                                w.out_features);
                }
            }
        }
    }
}

}  // namespace

void configure_amx_tiles() {
    // GCC 12 may drop plain stores to a buffer whose only reader is ldtilecfg (it does not see
    // the intrinsic read memory), which then loads a garbage configuration and faults: the
    // stores go through a volatile pointer and a compiler barrier orders them before the load.
    alignas(64) uint8_t config[64];
    volatile uint8_t* fill = config;
    for (int i = 0; i < 64; ++i) fill[i] = 0;
    fill[0] = 1;  // palette 1
    for (int t = 0; t < 8; ++t) {
        fill[16 + 2 * t] = 64;  // bytes per row (little-endian u16)
        fill[48 + t] = 16;      // rows
    }
    asm volatile("" ::: "memory");
    _tile_loadconfig(config);
}

void release_amx_tiles() {
    _tile_release();
}

void linear_gemm_bf16_amx(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                          float* y) {
    // The GEMMs' shared per-thread buffer, which reserve_linear_workspace() grows from the shapes.
    // Rows are padded to 32: the pad rows' values never reach y.
    const int64_t padded_rows = (num_rows + 2 * kAmxRows - 1) / (2 * kAmxRows) * (2 * kAmxRows);
    uint16_t* xb = gemm_bf16_x_buffer(size_t(padded_rows * w.padded_in));
    // Rows per pass over the weights: x of a pass stays in L2 while each weight tile passes by.
    const int64_t panel_rows = [&] {
        int64_t rows = kPanelBytes / (w.padded_in * 2) / (2 * kAmxRows) * (2 * kAmxRows);
        return rows < 2 * kAmxRows ? 2 * kAmxRows : rows;
    }();
    if (num_rows * w.in_features >= (int64_t(1) << 16)) {
        parallel_for(num_rows, [&](int64_t begin, int64_t end) {
            round_rows_to_bf16(x, begin, end, w.in_features, w.padded_in, xb);
        });
    } else {
        round_rows_to_bf16(x, 0, num_rows, w.in_features, w.padded_in, xb);
    }
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        configure_amx_tiles();
        for (int64_t r = 0; r < num_rows; r += panel_rows)
            gemm_tiles(xb, r, min_i64(num_rows, r + panel_rows), w, begin, end, bias, y);
        release_amx_tiles();
    });
}

}  // namespace lmrun::kernels
