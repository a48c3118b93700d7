// Internal to the linear kernels: the packed weight layout and the per-ISA GEMV entry points
// (tests call them directly to cover every ISA path).
//
// Layout (oneDNN's BA16a64b2a / BA16a64b for the [in, out] = Wᵀ matrix; int8 in linear_int8.h): out_features
// is split into tiles of 64 outputs, in_features is padded to a multiple of 32 for BF16 (16 pairs) and of 16
// for F32, as oneDNN's tags require (padding is zero). Tile t is contiguous and holds outputs [64t, 64t+64):
//   BF16: [padded_in/2][64][2]  element (n, k) at pair k/2, lane n%64, slot k%2
//   F32:  [padded_in][64]       element (n, k) at row k, lane n%64
// A tile is one sequential weight stream; a GEMV thread interleaves a few tiles' streams.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace lmrun::kernels {

inline constexpr int64_t kTileOutputs = 64;
inline constexpr int64_t in_padding(DType dtype) {
    return dtype == DType::I8 ? 64 : dtype == DType::BF16 ? 32 : 16;
}

struct PackedLinear {
    const void* data = nullptr;
    DType dtype = DType::F32;  // F32, BF16 or I8 (int8 layout and scales: linear_int8.h)
    int64_t out_features = 0;
    int64_t in_features = 0;
    int64_t padded_in = 0;  // in_features rounded up to in_padding(dtype)
    int64_t num_tiles = 0;  // ceil(out_features / kTileOutputs)
    // I8 only, num_tiles * 64 entries (padding outputs 0): per-output scales, 128 · Σ_k q[n][k].
    const float* scales = nullptr;
    const int32_t* compensation = nullptr;

    int64_t tile_elements() const { return padded_in * kTileOutputs; }
    // Outputs rounded up to whole tiles: the length of the int8 scales and compensations.
    size_t padded_outputs() const { return size_t(num_tiles) * size_t(kTileOutputs); }
    size_t tiles_nbytes() const { return size_t(num_tiles * tile_elements()) * dtype_size_bytes(dtype); }
};

// The layout of a weight of this shape and storage: dtype, sizes, padded_in and num_tiles set;
// data, scales and compensation left for the caller.
inline PackedLinear packed_layout(int64_t out_features, int64_t in_features, DType storage_dtype) {
    PackedLinear w;
    w.dtype = storage_dtype;
    w.out_features = out_features;
    w.in_features = in_features;
    const int64_t padding = in_padding(storage_dtype);
    w.padded_in = (in_features + padding - 1) / padding * padding;
    w.num_tiles = (out_features + kTileOutputs - 1) / kTileOutputs;
    return w;
}

// Element offset of W[n][k] in the packed buffer.
inline int64_t packed_offset(const PackedLinear& w, int64_t n, int64_t k) {
    int64_t tile_base = (n / kTileOutputs) * w.tile_elements();
    int64_t lane = n % kTileOutputs;
    if (w.dtype == DType::BF16) return tile_base + (k / 2) * kTileOutputs * 2 + lane * 2 + (k % 2);
    if (w.dtype == DType::I8) return tile_base + (k / 4) * kTileOutputs * 4 + lane * 4 + (k % 4);
    return tile_base + k * kTileOutputs + lane;
}

// y[num_rows, out] = x[num_rows, in] · Wᵀ + bias, any num_rows (best for few rows).
void linear_gemv_avx2(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);
void linear_gemv_avx512(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);
// AVX2 GEMM for BF16 or F32 weights and many rows (each weight tile read once per call, x in
// F32): prefill and batched decode where there is no BF16 dot product. Allocation-free.
void linear_gemm_avx2(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);
// BF16 weights only, needs AVX512_BF16: x is rounded to BF16 (as oneDNN does), F32 sums; for
// the many-row batches of decode. Allocates only when num_rows grows past what it has seen, or
// past what reserve_linear_workspace() prepared on the calling thread.
void linear_gemm_bf16_avx512(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                             float* y);
// The same with AMX-BF16 tiles (x rounded to BF16, F32 sums); needs kernel_isa() == amx.
void linear_gemm_bf16_amx(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                          float* y);

// The calling thread's buffer for activations rounded to BF16 by the GEMM, grown to `count`
// elements if smaller (generic code, so growing it never runs AVX-512 instructions).
uint16_t* gemm_bf16_x_buffer(size_t count);

}  // namespace lmrun::kernels
