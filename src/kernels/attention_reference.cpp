#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention.h"

namespace lmrun::kernels {
namespace {

double cache_value(const KvCacheLayer& cache, const void* base, int64_t slot, int64_t kv_head, int64_t d) {
    int64_t index = (slot * cache.num_kv_heads + kv_head) * cache.head_dim + d;
    if (cache.dtype == DType::BF16) return bf16_to_f32(static_cast<const uint16_t*>(base)[index]);
    if (kv_dtype_is_scaled(cache.dtype)) {
        const float* scales = base == cache.k ? cache.k_scale : cache.v_scale;
        return double(kv_byte_value(cache.dtype, static_cast<const uint8_t*>(base)[index])) *
               scales[slot * cache.num_kv_heads + kv_head];
    }
    return static_cast<const float*>(base)[index];
}

}  // namespace

void paged_attention_reference(const float* q, int64_t q_token_stride, int64_t num_seqs,
                               const int32_t* cu_seqlens_q, const int32_t* context_lens,
                               const int32_t* block_tables, int64_t max_blocks_per_seq,
                               const KvCacheLayer& cache, int64_t num_heads, float scale, float* out) {
    const int64_t head_dim = cache.head_dim;
    const int64_t group = num_heads / cache.num_kv_heads;
    std::vector<double> weights;
    for (int64_t s = 0; s < num_seqs; ++s) {
        int64_t q_len = cu_seqlens_q[s + 1] - cu_seqlens_q[s];
        for (int64_t i = 0; i < q_len; ++i) {
            int64_t token = cu_seqlens_q[s] + i;
            int64_t position = context_lens[s] - q_len + i;
            for (int64_t h = 0; h < num_heads; ++h) {
                int64_t kv_head = h / group;
                const float* qh = q + token * q_token_stride + h * head_dim;
                weights.assign(size_t(position + 1), 0.0);
                double max_score = -std::numeric_limits<double>::infinity();
                for (int64_t key = 0; key <= position; ++key) {
                    int64_t slot = int64_t(block_tables[s * max_blocks_per_seq + key / cache.block_size]) *
                                       cache.block_size +
                                   key % cache.block_size;
                    double dot = 0;
                    for (int64_t d = 0; d < head_dim; ++d)
                        dot += qh[d] * cache_value(cache, cache.k, slot, kv_head, d);
                    weights[key] = dot * scale;
                    max_score = std::max(max_score, weights[key]);
                }
                double total = 0;
                for (double& w : weights) total += (w = std::exp(w - max_score));
                float* oh = out + (token * num_heads + h) * head_dim;
                for (int64_t d = 0; d < head_dim; ++d) {
                    double acc = 0;
                    for (int64_t key = 0; key <= position; ++key) {
                        int64_t slot =
                            int64_t(block_tables[s * max_blocks_per_seq + key / cache.block_size]) *
                                cache.block_size +
                            key % cache.block_size;
                        acc += weights[key] * cache_value(cache, cache.v, slot, kv_head, d);
                    }
                    oh[d] = float(acc / total);
                }
            }
        }
    }
}

}  // namespace lmrun::kernels
