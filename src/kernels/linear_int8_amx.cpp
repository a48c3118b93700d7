// AMX-INT8 GEMM over the packed int8 tiles (layout and arithmetic in linear_int8.h), for batched
// decode and prefill where the CPU has AMX. Allocation-free after the first call with a given
// row count.
//
// As for BF16 (linear_gemm_amx.cpp), the packed layout is AMX's: a k-quad of a 64-output tile is
// 256 bytes, so a B tile (16 k-quads × 16 outputs) is read from the packed weight with a 256-byte
// row stride. x is quantized per row to q_x + 128 (tdpbusd multiplies unsigned by signed bytes)
// into a per-thread buffer of rows padded to 32; the int32 sums go through the tiles to a small
// buffer, then compensation, scales and bias are applied (linear_int8_driver.h).

#include "kernels/avx512_intrinsics.h"

#include <vector>

#include "core/parallel.h"
#include "kernels/linear_amx.h"
#include "kernels/linear_int8.h"
#include "kernels/linear_int8_driver.h"

namespace lmrun::kernels {
namespace {

constexpr int64_t kQuadsPerStep = 16;              // k-quads of a B tile (64 k)
constexpr int64_t kPanelBytes = int64_t(1) << 20;  // x bytes handled per pass over the weights

// One 16-row block × the tile's 64 outputs → c [16][64].
void tile_rows16(const int8_t* tile, int64_t quads, const uint8_t* x, int64_t x_stride, int32_t* c,
                 NextTilePrefetch& prefetch) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t p = 0; p < quads; p += kQuadsPerStep) {
        const int8_t* wp = tile + p * kInt8QuadBytes;
        prefetch.step();
        _tile_loadd(4, x + 4 * p, x_stride);
        _tile_loadd(5, wp, kInt8QuadBytes);
        _tile_dpbusd(0, 4, 5);
        _tile_loadd(6, wp + 64, kInt8QuadBytes);
        _tile_dpbusd(1, 4, 6);
        _tile_loadd(5, wp + 128, kInt8QuadBytes);
        _tile_dpbusd(2, 4, 5);
        _tile_loadd(6, wp + 192, kInt8QuadBytes);
        _tile_dpbusd(3, 4, 6);
    }
    _tile_stored(0, c, 256);
    _tile_stored(1, c + 16, 256);
    _tile_stored(2, c + 32, 256);
    _tile_stored(3, c + 48, 256);
}

// Two 16-row blocks × outputs [32h, 32h + 32) → c [32][64] at columns 32h.
void tile_rows32(const int8_t* tile, int64_t quads, const uint8_t* x, int64_t x_stride, int64_t h, int32_t* c,
                 NextTilePrefetch& prefetch) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const uint8_t* x_high = x + kAmxRows * x_stride;
    for (int64_t p = 0; p < quads; p += kQuadsPerStep) {
        const int8_t* wp = tile + p * kInt8QuadBytes + 128 * h;
        prefetch.step();
        _tile_loadd(4, x + 4 * p, x_stride);
        _tile_loadd(6, wp, kInt8QuadBytes);
        _tile_loadd(5, x_high + 4 * p, x_stride);
        _tile_loadd(7, wp + 64, kInt8QuadBytes);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
    }
    int32_t* out = c + 32 * h;
    _tile_stored(0, out, 256);
    _tile_stored(1, out + 16, 256);
    _tile_stored(2, out + std::ptrdiff_t{16} * 64, 256);
    _tile_stored(3, out + std::ptrdiff_t{16} * 64 + 16, 256);
}

void gemm_tiles(const uint8_t* xq, const float* x_scales, int64_t row_begin, int64_t row_end,
                const PackedLinear& w, int64_t tile_begin, int64_t tile_end, const float* bias, float* y) {
    alignas(64) int32_t c[2 * kAmxRows * kTileOutputs];
    const auto* data = static_cast<const int8_t*>(w.data);
    const int64_t quads = w.padded_in / 4;
    const int64_t rows = row_end - row_begin;
    const int64_t steps = amx_passes_per_tile(rows) * (quads / kQuadsPerStep);
    for (int64_t t = tile_begin; t < tile_end; ++t) {
        const int8_t* tile = data + t * w.tile_elements();
        NextTilePrefetch prefetch(t + 1 < tile_end ? tile + w.tile_elements() : nullptr, w.tile_elements(),
                                  steps);
        for (int64_t r = row_begin; r < row_end; r += 2 * kAmxRows) {
            const uint8_t* x = xq + r * w.padded_in;
            int64_t block_rows = int8_min(2 * kAmxRows, row_end - r);
            if (rows <= kAmxRows) {
                tile_rows16(tile, quads, x, w.padded_in, c, prefetch);
            } else {
                tile_rows32(tile, quads, x, w.padded_in, 0, c, prefetch);
                tile_rows32(tile, quads, x, w.padded_in, 1, c, prefetch);
            }
            dequantize_tile<true>(c, block_rows, x_scales + r, w, t, bias, y + r * w.out_features);
        }
    }
}

}  // namespace

void linear_int8_amx(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    // Rows padded to 32: the pad rows' sums never reach y.
    static_assert(kInt8AmxRowPadding == 2 * kAmxRows);
    const int64_t padded_rows = (num_rows + kInt8AmxRowPadding - 1) / kInt8AmxRowPadding * kInt8AmxRowPadding;
    uint8_t* xq = int8_x_buffer(size_t(padded_rows * w.padded_in));
    float* scales = int8_x_scale_buffer(size_t(num_rows));
    if (num_rows * w.in_features >= (int64_t(1) << 16)) {
        parallel_for(num_rows, [&](int64_t begin, int64_t end) {
            quantize_rows_int8(x + begin * w.in_features, end - begin, w.in_features, w.padded_in, true,
                               xq + begin * w.padded_in, scales + begin);
        });
    } else {
        quantize_rows_int8(x, num_rows, w.in_features, w.padded_in, true, xq, scales);
    }
    const int64_t panel_rows = [&] {
        int64_t rows = kPanelBytes / w.padded_in / (2 * kAmxRows) * (2 * kAmxRows);
        return rows < 2 * kAmxRows ? 2 * kAmxRows : rows;
    }();
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        configure_amx_tiles();
        for (int64_t r = 0; r < num_rows; r += panel_rows)
            gemm_tiles(xq, scales, r, int8_min(num_rows, r + panel_rows), w, begin, end, bias, y);
        release_amx_tiles();
    });
}

}  // namespace lmrun::kernels
