// RMSNorm with HF semantics, in F32: y = x / sqrt(mean(x²) + eps) * weight.
// x, y: [num_rows, dim] contiguous F32; weight: [dim] F32. y may alias x.
#pragma once

#include <cstdint>

namespace lmrun::kernels {

void rms_norm(const float* x, const float* weight, float eps, int64_t num_rows, int64_t dim, float* y);
// Fused residual add (nano-vLLM's add_rms_norm): residual += x; x = rms_norm(residual), in place.
void add_rms_norm(float* x, float* residual, const float* weight, float eps, int64_t num_rows, int64_t dim);

// Per-head RMSNorm in place (Qwen3's q_norm / k_norm, applied before RoPE): x is
// [num_tokens, num_heads, head_dim] with token_stride floats between tokens (q or k inside a
// packed qkv buffer); weight: [head_dim], shared by all heads.
void rms_norm_heads(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t token_stride,
                    const float* weight, float eps);
// The same for one token's num_heads contiguous heads, on the calling thread.
void rms_norm_token_heads(float* heads, int64_t num_heads, int64_t head_dim, const float* weight, float eps);

// Scalar twins (sums in double).
void rms_norm_reference(const float* x, const float* weight, float eps, int64_t num_rows, int64_t dim,
                        float* y);
void add_rms_norm_reference(float* x, float* residual, const float* weight, float eps, int64_t num_rows,
                            int64_t dim);

// Per-ISA row kernels, single-threaded (the dispatchers above split rows over threads).
// add == true does the fused residual add first (x is then both input and output).
void rms_norm_rows_avx2(float* x, float* residual, const float* weight, float eps, int64_t num_rows,
                        int64_t dim, float* y, bool add);
void rms_norm_rows_avx512(float* x, float* residual, const float* weight, float eps, int64_t num_rows,
                          int64_t dim, float* y, bool add);

}  // namespace lmrun::kernels
