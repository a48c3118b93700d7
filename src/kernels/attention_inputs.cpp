#include "kernels/attention_inputs.h"

#include "core/parallel.h"
#include "kernels/norm.h"
#include "kernels/rope.h"

namespace lmrun::kernels {

void prepare_attention_inputs(const QkvRows& rows, int64_t num_tokens, HeadNorm q_norm, HeadNorm k_norm,
                              const int32_t* positions, const float* rope_cos_sin,
                              const int32_t* slot_mapping, const KvCacheLayer& cache) {
    const int64_t head_dim = rows.head_dim;
    auto prepare_tokens = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            float* q = rows.qkv + t * rows.token_stride;
            float* k = q + rows.num_heads * head_dim;
            const float* v = k + rows.num_kv_heads * head_dim;
            if (q_norm.weight) rms_norm_token_heads(q, rows.num_heads, head_dim, q_norm.weight, q_norm.eps);
            if (k_norm.weight)
                rms_norm_token_heads(k, rows.num_kv_heads, head_dim, k_norm.weight, k_norm.eps);
            apply_rope_token(q, rows.num_heads, head_dim, positions[t], rope_cos_sin);
            apply_rope_token(k, rows.num_kv_heads, head_dim, positions[t], rope_cos_sin);
            store_kvcache_token(k, v, slot_mapping[t], cache);
        }
    };
    // A decode step of a few sequences is a few KiB: less than a parallel region costs.
    constexpr int64_t kParallelFloats = 1 << 15;
    if (num_tokens * rows.token_stride < kParallelFloats) return prepare_tokens(0, num_tokens);
    parallel_for(num_tokens, prepare_tokens);
}

}  // namespace lmrun::kernels
