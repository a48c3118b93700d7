// Internal to the linear kernels: int8 weights with int8 activations (W8A8), int32 sums.
//
// Weights: per-output-channel symmetric int8, w[n][k] ≈ q[n][k] · scale[n], q in [-127, 127]
// (-128 never occurs: the AVX2 sign trick below needs |q| ≤ 127). Packed in 64-output tiles like
// the BF16 layout (linear_gemv.h), with 4 consecutive k per lane, the operand layout of vpdpbusd
// and of AMX-INT8's B tiles:
//   tile t: [padded_in/4][64][4] int8, element (n, k) at quad k/4, lane n%64, slot k%4;
//   padded_in is a multiple of 64 (one AMX B tile of k); padding is zero.
// compensation[n] = 128 · Σ_k q[n][k], for the kernels that feed x as unsigned bytes.
//
// Activations: per-row (per-token) dynamic symmetric int8, computed on every call:
//   amax = max_k |x[r][k]|, q_x = round_nearest_even(x · (127 / amax)), row scale = amax / 127
//   (an all-zero row has scale 0 and q_x = 0). vpdpbusd and AMX multiply unsigned by signed bytes,
//   so those kernels take u = q_x + 128 and subtract compensation[n] from the sums; AVX2 (and
//   AVX-512 without VNNI) multiply |q_x| by q·sign(q_x) with vpmaddubsw (never saturates:
//   2 · 127 · 127 < 32768) and widen with vpmaddwd.
// y[r][n] = float(Σ_k q_x[r][k] · q[n][k]) · (row scale · scale[n]) + bias[n].
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/linear_gemv.h"

namespace lmrun::kernels {

inline constexpr int64_t kInt8InPadding = 64;
inline constexpr int64_t kInt8QuadBytes = kTileOutputs * 4;  // one k-quad of a tile

// (packed_offset() in linear_gemv.h gives the byte of W[n][k].)

// Per-thread scratch of the int8 kernels, grown to `count` elements and kept: the quantized rows
// of x (AMX pads them to kInt8AmxRowPadding rows), their scales, and a tile's int32 sums (on each
// worker thread). One base-ISA unit owns them (linear.cpp), so reserve_linear_workspace() can grow
// them from the shapes before any decode step runs.
inline constexpr int64_t kInt8AmxRowPadding = 32;
uint8_t* int8_x_buffer(size_t count);
float* int8_x_scale_buffer(size_t count);
int32_t* int8_sum_buffer(size_t count);

// max_k |values[k]| (0 for count 0; NaNs are skipped): the amax of a symmetric int8 or fp8 scale.
float row_abs_max(const float* values, int64_t count);

// Symmetric int8 of one row: q = round(v · 127 / amax); returns the scale amax / 127 (0 for an
// all-zero row). Used for weights at pack time and (scalar twin) for activations.
float quantize_row_int8_reference(const float* values, int64_t count, int8_t* q);

// Quantizes rows of x into [num_rows][padded_in] bytes (padding zero): signed q_x, or
// q_x + 128 when `unsigned_offset` (padding then 128, harmless: the padded weights are zero).
// AVX2; bit-identical to quantize_row_int8_reference.
void quantize_rows_int8(const float* x, int64_t num_rows, int64_t in_features, int64_t padded_in,
                        bool unsigned_offset, uint8_t* out, float* row_scales);

// y = dequant(quantized x · Wᵀ) + bias for int8 weights, any num_rows. Allocation-free once
// they have seen num_rows (per-thread buffers grow to the largest call).
void linear_int8_avx2(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);
// AVX-512BW without VNNI: the sign trick on 64-byte vectors.
void linear_int8_avx512(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);
// AVX512_VNNI: vpdpbusd; GEMV for few rows, 6-row × 64-output micro-tiles for more.
void linear_int8_vnni(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);
// AMX-INT8 tiles (many rows); needs kernel_isa() == amx.
void linear_int8_amx(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y);

}  // namespace lmrun::kernels
