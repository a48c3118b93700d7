// Gated activation of the MLP (nano-vLLM's SiluAndMul).
// gate_up: [num_rows, 2 * dim] F32, gate first then up; out: [num_rows, dim] = silu(gate) * up,
// silu(g) = g / (1 + e^-g).
#pragma once

#include <cstdint>

namespace lmrun::kernels {

void silu_and_mul(const float* gate_up, int64_t num_rows, int64_t dim, float* out);
void silu_and_mul_reference(const float* gate_up, int64_t num_rows, int64_t dim, float* out);

// Per-ISA row kernels, single-threaded (silu_and_mul splits rows over threads).
void silu_and_mul_rows_avx2(const float* gate_up, int64_t num_rows, int64_t dim, float* out);
void silu_and_mul_rows_avx512(const float* gate_up, int64_t num_rows, int64_t dim, float* out);

}  // namespace lmrun::kernels
