// Paged KV cache writes and causal attention over it (nano-vLLM's store_kvcache and
// flash_attn_with_kvcache, CPU). Layouts:
//   cache k, v: [num_blocks, block_size, num_kv_heads, head_dim], F32, BF16, I8 or F8E4M3;
//               token slot = block_id * block_size + offset.
//   k_scale, v_scale (I8 / F8E4M3 caches): [num_blocks, block_size, num_kv_heads] F32, one
//               scale per token and KV head: value = stored · scale (kv_quantize.h).
//   q:   [num_tokens, num_heads, head_dim], row stride q_token_stride floats (may sit in a qkv buffer)
//   out: [num_tokens, num_heads, head_dim] contiguous F32.
//   block_tables: [num_seqs, max_blocks_per_seq] int32; row s lists sequence s's blocks in order.
// GQA: query head h reads kv head h / (num_heads / num_kv_heads). Softmax and accumulation in F32.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace lmrun::kernels {

// One layer's paged KV cache.
struct KvCacheLayer {
    void* k = nullptr;
    void* v = nullptr;
    DType dtype = DType::F32;
    int64_t num_blocks = 0, block_size = 0, num_kv_heads = 0, head_dim = 0;
    float* k_scale = nullptr;  // I8 / F8E4M3 only
    float* v_scale = nullptr;
};

// Whether a cache dtype stores bytes with a scale per token and KV head.
inline bool kv_dtype_is_scaled(DType dtype) {
    return dtype == DType::I8 || dtype == DType::F8E4M3;
}
// Stored byte → value / scale (fp8 decodes exactly; int8 is the integer).
inline float kv_byte_value(DType dtype, uint8_t byte) {
    return dtype == DType::I8 ? float(int8_t(byte)) : fp8_e4m3_to_f32(byte);
}

// Writes K/V of num_tokens new tokens into their slots. k, v: [num_tokens, num_kv_heads, head_dim]
// with row stride token_stride floats. slot_mapping[i] < 0 means skip (padding). I8 / F8E4M3
// caches quantize each (token, KV head) row with its own scale.
void store_kvcache(const float* k, const float* v, int64_t token_stride, int64_t num_tokens,
                   const int32_t* slot_mapping, const KvCacheLayer& cache);
// One token's K/V rows into `slot` (< 0: skip), on the calling thread.
void store_kvcache_token(const float* k, const float* v, int64_t slot, const KvCacheLayer& cache);

// Causal attention for a batch of sequences whose new tokens' K/V are already stored.
// Sequence s has q_len = cu_seqlens_q[s+1] - cu_seqlens_q[s] queries (1 for decode, a chunk for
// prefill); context_lens[s] counts all its keys including the new ones; its query i sits at
// position context_lens[s] - q_len + i and attends to keys [0, that position].
// Work is split over threads by (sequence, kv head, query tile) and, when that gives fewer items
// than 2x threads (decode of few sequences), also by key range (split-K, merged afterwards).
// No heap allocation after the first calls (per-thread scratch is grown once).
void paged_attention(const float* q, int64_t q_token_stride, int64_t num_seqs, const int32_t* cu_seqlens_q,
                     const int32_t* context_lens, const int32_t* block_tables, int64_t max_blocks_per_seq,
                     const KvCacheLayer& cache, int64_t num_heads, float scale, float* out);
// Grows the per-thread scratch (every thread of the team), the split-K partials and the tile
// plan of the calling thread to what any step of up to max_num_seqs sequences needs, computed
// from the shapes: paged_attention() then allocates nothing on this thread.
void reserve_attention_workspace(int64_t head_dim, int64_t num_heads, int64_t num_kv_heads,
                                 int64_t max_num_seqs);
// Scalar twin: exact softmax in double, one query head at a time.
void paged_attention_reference(const float* q, int64_t q_token_stride, int64_t num_seqs,
                               const int32_t* cu_seqlens_q, const int32_t* context_lens,
                               const int32_t* block_tables, int64_t max_blocks_per_seq,
                               const KvCacheLayer& cache, int64_t num_heads, float scale, float* out);

}  // namespace lmrun::kernels
