// RMSNorm with HF semantics, in F32: y = x / sqrt(mean(x²) + eps) * weight.
// x, y: [num_rows, dim] contiguous F32; weight: [dim] F32. y may alias x.
#pragma once

#include <cstdint>

namespace lmrun::kernels {

void rms_norm(const float* x, const float* weight, float eps, int64_t num_rows, int64_t dim, float* y);
// Fused residual add (nano-vLLM's add_rms_norm): residual += x; x = rms_norm(residual), in place.
void add_rms_norm(float* x, float* residual, const float* weight, float eps, int64_t num_rows,
                  int64_t dim);

// Scalar twins (sums in double).
void rms_norm_reference(const float* x, const float* weight, float eps, int64_t num_rows,
                        int64_t dim, float* y);
void add_rms_norm_reference(float* x, float* residual, const float* weight, float eps,
                            int64_t num_rows, int64_t dim);

// Per-ISA row kernels, single-threaded (the dispatchers above split rows over threads).
// add == true does the fused residual add first (x is then both input and output).
void rms_norm_rows_avx2(float* x, float* residual, const float* weight, float eps,
                        int64_t num_rows, int64_t dim, float* y, bool add);
void rms_norm_rows_avx512(float* x, float* residual, const float* weight, float eps,
                          int64_t num_rows, int64_t dim, float* y, bool add);

}  // namespace lmrun::kernels
