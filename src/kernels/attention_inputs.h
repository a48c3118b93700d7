// The steps between the qkv projection and paged attention, fused into one pass over tokens:
// per-head RMSNorm of q and k (Qwen3's q_norm / k_norm), RoPE on q and k, then k and v into the
// paged cache. Each token's rows are touched once, while in L1, by one thread, in one parallel
// region, where five separate kernels (two norms, two rotations, the store) took five regions
// and five passes over the qkv buffer. Zen 5, `lmrun bench --profile`, 3 alternating rounds,
// ms per step: batch 32 decode 1.04-1.37 → 0.80-0.90, batch 64 1.32-2.63 → 1.21-1.79, prefill
// 128 2.0-4.2 → 1.8-2.4 (about 0.5% of a batched decode step).
#pragma once

#include <cstdint>

#include "kernels/attention.h"

namespace lmrun::kernels {

// qkv: [num_tokens, token_stride] F32 with q (num_heads heads), k and v (num_kv_heads heads
// each) at the start of every token's row, head_dim floats per head.
struct QkvRows {
    float* qkv;
    int64_t token_stride, num_heads, num_kv_heads, head_dim;
};

// A per-head RMSNorm: [head_dim] weight (null: none) and its eps.
struct HeadNorm {
    const float* weight = nullptr;
    float eps = 0.0f;
};

// q_norm / k_norm: without weights when the model has no per-head norm.
// positions, slot_mapping: [num_tokens] (a slot < 0 is padding: rotated, not stored).
void prepare_attention_inputs(const QkvRows& rows, int64_t num_tokens, HeadNorm q_norm, HeadNorm k_norm,
                              const int32_t* positions, const float* rope_cos_sin,
                              const int32_t* slot_mapping, const KvCacheLayer& cache);

}  // namespace lmrun::kernels
