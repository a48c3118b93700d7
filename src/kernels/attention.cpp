#include "kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/parallel.h"
#include "kernels/attention_tile.h"

namespace lmrun::kernels {
namespace {

// Per-thread scratch, grown once to the largest head_dim seen; no allocation afterwards.
float* thread_scratch(int64_t num_floats) {
    thread_local std::vector<float> scratch;
    if (int64_t(scratch.size()) < num_floats) scratch.resize(size_t(num_floats));
    return scratch.data();
}

// tile_starts[s] = index of sequence s's first query tile; tile_starts[num_seqs] = total tiles.
// Grown once per thread, like the scratch.
const std::vector<int64_t>& plan_tiles(const AttentionArgs& a, int64_t num_seqs,
                                       int64_t tokens_per_tile) {
    thread_local std::vector<int64_t> tile_starts;
    if (int64_t(tile_starts.size()) < num_seqs + 1) tile_starts.resize(size_t(num_seqs + 1));
    tile_starts[0] = 0;
    for (int64_t s = 0; s < num_seqs; ++s) {
        int64_t q_len = a.cu_seqlens_q[s + 1] - a.cu_seqlens_q[s];
        tile_starts[s + 1] = tile_starts[s] + (q_len + tokens_per_tile - 1) / tokens_per_tile;
    }
    return tile_starts;
}

}  // namespace

void store_kvcache(const float* k, const float* v, int64_t token_stride, int64_t num_tokens,
                   const int32_t* slot_mapping, const KvCacheLayer& cache) {
    const int64_t row = cache.num_kv_heads * cache.head_dim;
    parallel_for(num_tokens, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            int64_t slot = slot_mapping[i];
            if (slot < 0) continue;
            LMRUN_CHECK(slot < cache.num_blocks * cache.block_size, "slot %ld out of range", long(slot));
            for (auto [src, dst] : {std::pair{k, cache.k}, std::pair{v, cache.v}}) {
                const float* from = src + i * token_stride;
                if (cache.dtype == DType::F32) {
                    std::copy(from, from + row, static_cast<float*>(dst) + slot * row);
                } else {
                    convert_from_f32(from, static_cast<uint16_t*>(dst) + slot * row, DType::BF16,
                                     size_t(row));
                }
            }
        }
    });
}

void paged_attention_for_isa(Isa isa, const AttentionArgs& a, int64_t num_seqs) {
    const KvCacheLayer& cache = a.cache;
    LMRUN_CHECK(cache.num_kv_heads > 0 && a.num_heads % cache.num_kv_heads == 0,
                "num_heads %ld is not a multiple of num_kv_heads %ld", long(a.num_heads),
                long(cache.num_kv_heads));
    LMRUN_CHECK(cache.head_dim <= kMaxHeadDim, "head_dim %ld too large", long(cache.head_dim));
    LMRUN_CHECK(cache.dtype == DType::F32 || cache.dtype == DType::BF16, "KV cache must be F32 or BF16");
    const int64_t group = a.num_heads / cache.num_kv_heads;
    LMRUN_CHECK(group <= kTileRows, "GQA group %ld too large", long(group));
    const int64_t tokens_per_tile = kTileRows / group;
    const std::vector<int64_t>& tile_starts = plan_tiles(a, num_seqs, tokens_per_tile);
    const int64_t num_items = tile_starts[num_seqs] * cache.num_kv_heads;
    const bool avx512 = isa >= Isa::Avx512 && attention_avx512_supports(cache.head_dim);
    const int64_t scratch_floats = attention_scratch_floats(cache.head_dim);

    // Dynamic schedule: tiles differ in cost (context length, causal position), and a long
    // prefill is many tiles, so no thread is stuck with one sequence.
#pragma omp parallel
    {
        float* scratch = thread_scratch(scratch_floats);
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < num_items; ++i) {
            // Reverse order: the last tiles of a sequence see the most keys; start them first.
            int64_t item = num_items - 1 - i;
            int64_t tile_index = item / cache.num_kv_heads;
            int64_t seq = std::upper_bound(tile_starts.begin(), tile_starts.begin() + num_seqs + 1,
                                           tile_index) - tile_starts.begin() - 1;
            int64_t q_len = a.cu_seqlens_q[seq + 1] - a.cu_seqlens_q[seq];
            int64_t token_begin = (tile_index - tile_starts[seq]) * tokens_per_tile;
            AttentionTile tile{seq, item % cache.num_kv_heads, token_begin,
                               std::min(tokens_per_tile, q_len - token_begin)};
            if (avx512) {
                attention_tile_avx512(a, tile, scratch);
            } else {
                attention_tile_avx2(a, tile, scratch);
            }
        }
    }
}

void paged_attention(const float* q, int64_t q_token_stride, int64_t num_seqs,
                     const int32_t* cu_seqlens_q, const int32_t* context_lens,
                     const int32_t* block_tables, int64_t max_blocks_per_seq,
                     const KvCacheLayer& cache, int64_t num_heads, float scale, float* out) {
    AttentionArgs args{q, q_token_stride, cu_seqlens_q, context_lens, block_tables,
                       max_blocks_per_seq, cache, num_heads, scale, out};
    paged_attention_for_isa(kernel_isa(), args, num_seqs);
}

}  // namespace lmrun::kernels
