// Quantization of one (token, KV head) row for the int8 and fp8 KV caches (attention.h): the
// bytes and the row's scale, value ≈ byte value · scale.
//   int8: scale = max|row| / 127, round to nearest even (linear_int8.h's quantizer).
//   fp8 e4m3: 3 mantissa bits give every value the same relative step (2^-4) whatever the scale,
//   but which values land near a grid point does depend on it: the row is encoded with 4
//   candidate scales (max|row| / 448 · 2^(j/4), j = 0..3) and keeps the one with the smallest
//   squared error (on stories260k, head_dim 8, this took the fp8 KV perplexity cost from ~1.1%
//   to ~0.7% of BF16's).
// AVX2 (every machine lmrun runs on), with a scalar twin that makes the same choice.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace lmrun::kernels {

inline constexpr int kFp8ScaleCandidates = 4;

// dtype: I8 or F8E4M3.
void quantize_kv_row(const float* src, int64_t dim, DType dtype, uint8_t* dst, float* scale);
void quantize_kv_row_reference(const float* src, int64_t dim, DType dtype, uint8_t* dst, float* scale);

}  // namespace lmrun::kernels
