// Vector helpers for the sampler over one row of logits [vocab_size] F32.
#pragma once

#include <cstdint>

namespace lmrun::kernels {

// Index of the largest logit; ties go to the lowest id. NaNs are never chosen unless all are NaN (→ 0).
int32_t argmax(const float* logits, int64_t vocab_size);
// In place: logits[i] = e^((l_i - max) / T) / Σ_j e^((l_j - max) / T). temperature must be > 0
// (the sampler validates user input; greedy decoding uses argmax instead).
void softmax(float* logits, int64_t vocab_size, float temperature);

int32_t argmax_reference(const float* logits, int64_t vocab_size);
void softmax_reference(float* logits, int64_t vocab_size, float temperature);  // in double

// Per-ISA variants (the functions above dispatch on kernel_isa()).
int32_t argmax_avx2(const float* logits, int64_t vocab_size);
int32_t argmax_avx512(const float* logits, int64_t vocab_size);
void softmax_avx2(float* logits, int64_t vocab_size, float temperature);
void softmax_avx512(float* logits, int64_t vocab_size, float temperature);

}  // namespace lmrun::kernels
