// Internal: the ISA-independent body of one attention tile, instantiated by each ISA's
// translation unit with its vector Ops (anonymous namespace so the AVX-512 instantiation can
// never replace the AVX2 one at link time).
//
// Flash-attention style online softmax: keys are walked in chunks of ≤ kKeyChunk inside one
// cache block; each chunk's K/V rows are loaded (BF16 widened, I8 / F8E4M3 dequantized to F32)
// once and used by every
// (token, head) row of the tile, i.e. by the whole GQA group. Per row we keep the running max
// m, the running sum l and the unnormalised output o, rescaled when m grows.
#pragma once

#include <math.h>

#include <limits>

#include "kernels/attention_tile.h"
#include "kernels/isa_local_math.h"

namespace lmrun::kernels {
namespace {

struct TileRows {
    float* q;  // [rows, head_dim], pre-multiplied by scale
    float* o;  // [rows, head_dim]
    float* m;
    float* l;
    float* k_row;    // [head_dim]: one key widened to F32 (paths that cannot keep it in registers)
    float* v_chunk;  // [kKeyChunk, head_dim] when the cache is BF16
    float* scores;   // [rows, kKeyChunk]
};

inline TileRows carve_scratch(float* scratch, int64_t head_dim) {
    TileRows t;
    t.q = scratch;
    t.o = t.q + kTileRows * head_dim;
    t.m = t.o + kTileRows * head_dim;
    t.l = t.m + kTileRows;
    t.k_row = t.l + kTileRows;
    t.v_chunk = t.k_row + head_dim;
    t.scores = t.v_chunk + kKeyChunk * head_dim;
    return t;
}

// The scale of each cache row of (slot, kv_head) onwards, num_kv_heads apart per token; nullptr
// for unscaled (F32, BF16) caches.
inline const float* row_scales(const float* scales, const KvCacheLayer& cache, int64_t slot,
                               int64_t kv_head) {
    return scales ? scales + slot * cache.num_kv_heads + kv_head : nullptr;
}

// Points at `count` consecutive keys (or values) of one kv head, as F32 rows (BF16 widened,
// I8 / F8E4M3 dequantized); returns the stride.
template <typename Ops>
int64_t chunk_rows(const Ops& ops, const void* base, const float* scales, const KvCacheLayer& cache,
                   int64_t slot, int64_t kv_head, int64_t count, float* buffer, const float** rows) {
    int64_t head_dim = ops.head_dim();
    int64_t stride = cache.num_kv_heads * head_dim;
    int64_t first = (slot * cache.num_kv_heads + kv_head) * head_dim;
    if (cache.dtype == DType::F32) {
        *rows = static_cast<const float*>(base) + first;
        return stride;
    }
    const float* row_scale = row_scales(scales, cache, slot, kv_head);
    for (int64_t j = 0; j < count; ++j)
        ops.widen(base, cache.dtype, first + j * stride, row_scale ? row_scale[j * cache.num_kv_heads] : 1.0f,
                  buffer + j * head_dim);
    *rows = buffer;
    return head_dim;
}

// Online-softmax update of one row with the scores of its visible keys in this chunk.
template <typename Ops>
void attend_chunk(const Ops& ops, const TileRows& t, int64_t row, int64_t num_keys, const float* values,
                  int64_t value_stride) {
    const int64_t head_dim = ops.head_dim();
    float* o = t.o + row * head_dim;
    float* scores = t.scores + row * kKeyChunk;
    float m_new = t.m[row];
    for (int64_t j = 0; j < num_keys; ++j) m_new = max_f32(m_new, scores[j]);
    if (m_new > t.m[row] && t.l[row] > 0.0f) {
        float correction = expf(t.m[row] - m_new);
        t.l[row] *= correction;
        ops.scale(o, correction);
    }
    t.m[row] = m_new;
    t.l[row] += ops.exp_and_sum(scores, num_keys, m_new);
    ops.accumulate(o, scores, num_keys, values, value_stride);
}

// The start of a tile that keeps its rows in F32: q (scaled by a.scale) and a zero o, m = -inf,
// l = 0 per row. Row r is head first_head + r % rows_per_token of token first_token +
// r / rows_per_token, as in finish_f32_rows.
template <int64_t D>
void init_f32_rows(const AttentionArgs& a, int64_t first_token, int64_t first_head, int64_t rows_per_token,
                   int64_t num_rows, float* q, float* o, float* m, float* l) {
    for (int64_t r = 0; r < num_rows; ++r) {
        const int64_t token = first_token + r / rows_per_token, head = first_head + r % rows_per_token;
        const float* src = a.q + token * a.q_token_stride + head * D;
        for (int64_t d = 0; d < D; ++d) q[r * D + d] = src[d] * a.scale, o[r * D + d] = 0.0f;
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
}

// The end of a tile that keeps its rows' o in F32: the unnormalised state for a split-K merge
// (attention.cpp), or o / l into the output rows. Row r is head first_head + r % rows_per_token
// of token first_token + r / rows_per_token.
template <int64_t D>
void finish_f32_rows(const AttentionArgs& a, const AttentionTile& w, int64_t first_token, int64_t first_head,
                     int64_t rows_per_token, int64_t num_rows, const float* o, const float* m,
                     const float* l) {
    if (w.partial) {
        for (int64_t r = 0; r < num_rows; ++r) {
            for (int64_t d = 0; d < D; ++d) w.partial[r * D + d] = o[r * D + d];
            store_partial_softmax_state(w.partial, D, r, m[r], l[r]);
        }
        return;
    }
    for (int64_t r = 0; r < num_rows; ++r) {
        const int64_t token = first_token + r / rows_per_token, head = first_head + r % rows_per_token;
        float* out = a.out + (token * a.num_heads + head) * D;
        const float inverse = 1.0f / l[r];
        for (int64_t d = 0; d < D; ++d) out[d] = o[r * D + d] * inverse;
    }
}

template <typename Ops>
void attention_tile(const Ops& ops, const AttentionArgs& a, const AttentionTile& w, float* scratch) {
    const int64_t head_dim = ops.head_dim();
    const KvCacheLayer& cache = a.cache;
    const int64_t group = a.num_heads / cache.num_kv_heads;
    const int64_t q_begin = a.cu_seqlens_q[w.seq];
    const int64_t q_len = a.cu_seqlens_q[w.seq + 1] - q_begin;
    const int64_t first_pos = a.context_lens[w.seq] - q_len + w.token_begin;
    const int64_t num_rows = w.num_tokens * group;
    TileRows t = carve_scratch(scratch, head_dim);
    for (int64_t row = 0; row < num_rows; ++row) {
        int64_t token = q_begin + w.token_begin + row / group;
        int64_t head = w.kv_head * group + row % group;
        ops.copy_scaled(a.q + token * a.q_token_stride + head * head_dim, a.scale, t.q + row * head_dim);
        for (int64_t d = 0; d < head_dim; ++d) t.o[row * head_dim + d] = 0.0f;
        t.m[row] = -std::numeric_limits<float>::infinity();
        t.l[row] = 0.0f;
    }
    const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
    const int64_t num_keys = min_i64(first_pos + w.num_tokens, w.key_end);  // ≤ last query position
    for (int64_t key0 = w.key_begin; key0 < num_keys;) {
        const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
        // The next chunk's rows of this one KV head (attention_tile.h says why; decode, 1k context,
        // d=128 BF16 cache, one thread: 1.65 → 1.2 ms per layer, wall clock).
        prefetch_next_chunk_part(cache, next_key_chunk(cache, blocks, key0, count, num_keys), w.kv_head, 1, 0,
                                 1, a.kv_prefetch_l2);
        // Scores of every row against every key of the chunk, each key loaded (and widened) once.
        int64_t key_offset = (slot * cache.num_kv_heads + w.kv_head) * head_dim;
        ops.score_rows(t, num_rows, cache.k, cache.dtype, key_offset, cache.num_kv_heads * head_dim, count,
                       row_scales(cache.k_scale, cache, slot, w.kv_head), cache.num_kv_heads);
        const float* values;
        int64_t value_stride =
            chunk_rows(ops, cache.v, cache.v_scale, cache, slot, w.kv_head, count, t.v_chunk, &values);
        for (int64_t row = 0; row < num_rows; ++row) {
            // Causal mask: the visible keys of this chunk are a prefix of it.
            int64_t visible = min_i64(count, first_pos + row / group - key0 + 1);
            if (visible > 0) attend_chunk(ops, t, row, visible, values, value_stride);
        }
        key0 += count;
    }
    if (w.partial) {
        float* partial = w.partial;
        for (int64_t i = 0; i < num_rows * head_dim; ++i) partial[i] = t.o[i];
        for (int64_t row = 0; row < num_rows; ++row)
            store_partial_softmax_state(partial, head_dim, row, t.m[row], t.l[row]);
        return;
    }
    for (int64_t row = 0; row < num_rows; ++row) {
        int64_t token = q_begin + w.token_begin + row / group;
        int64_t head = w.kv_head * group + row % group;
        ops.copy_scaled(t.o + row * head_dim, 1.0f / t.l[row],
                        a.out + (token * a.num_heads + head) * head_dim);
    }
}

}  // namespace
}  // namespace lmrun::kernels
