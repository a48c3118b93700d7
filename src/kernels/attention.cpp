#include "kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "core/check.h"
#include "core/parallel.h"
#include "kernels/attention_tile.h"
#include "kernels/kv_prefetch_level.h"
#include "kernels/kv_quantize.h"
#include "kernels/linear_amx.h"
#include "kernels/thread_buffer.h"

namespace lmrun::kernels {
namespace {

// Per-thread scratch, grown once to the largest head_dim seen; no allocation afterwards.
struct TileScratch;
float* thread_scratch(int64_t num_floats) {
    return thread_buffer<TileScratch, float>(size_t(num_floats)).data();
}

// Split-K partial results, owned by the calling thread and grown once, like the scratch.
struct SplitPartials;
float* partial_buffer(int64_t num_floats) {
    return thread_buffer<SplitPartials, float>(size_t(num_floats)).data();
}

// tile_starts[s] = index of sequence s's first query tile; tile_starts[num_seqs] = total tiles.
// Grown once per thread, like the scratch.
struct TileStarts;
std::vector<int64_t>& tile_start_buffer(int64_t count) {
    return thread_buffer<TileStarts, int64_t>(size_t(count));
}

const std::vector<int64_t>& plan_tiles(const AttentionArgs& a, int64_t num_seqs, int64_t tokens_per_tile) {
    std::vector<int64_t>& tile_starts = tile_start_buffer(num_seqs + 1);
    tile_starts[0] = 0;
    for (int64_t s = 0; s < num_seqs; ++s) {
        int64_t q_len = a.cu_seqlens_q[s + 1] - a.cu_seqlens_q[s];
        tile_starts[s + 1] = tile_starts[s] + (q_len + tokens_per_tile - 1) / tokens_per_tile;
    }
    return tile_starts;
}

}  // namespace

void store_kvcache_token(const float* k, const float* v, int64_t slot, const KvCacheLayer& cache) {
    if (slot < 0) return;
    LMRUN_CHECK(slot < cache.num_blocks * cache.block_size, "slot %ld out of range", long(slot));
    const int64_t row = cache.num_kv_heads * cache.head_dim;
    for (auto [from, dst, scales] :
         {std::tuple{k, cache.k, cache.k_scale}, std::tuple{v, cache.v, cache.v_scale}}) {
        if (cache.dtype == DType::F32) {
            std::copy(from, from + row, static_cast<float*>(dst) + slot * row);
        } else if (!kv_dtype_is_scaled(cache.dtype)) {
            convert_from_f32(from, static_cast<uint16_t*>(dst) + slot * row, DType::BF16, size_t(row));
        } else {
            for (int64_t h = 0; h < cache.num_kv_heads; ++h) {
                quantize_kv_row(from + h * cache.head_dim, cache.head_dim, cache.dtype,
                                static_cast<uint8_t*>(dst) + slot * row + h * cache.head_dim,
                                scales + slot * cache.num_kv_heads + h);
            }
        }
    }
}

void store_kvcache(const float* k, const float* v, int64_t token_stride, int64_t num_tokens,
                   const int32_t* slot_mapping, const KvCacheLayer& cache) {
    parallel_for(num_tokens, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            store_kvcache_token(k + i * token_stride, v + i * token_stride, slot_mapping[i], cache);
    });
}

namespace {

// Split-K for few, long work items (decode of one or two sequences): each item's key range is
// cut into `splits` parts computed in parallel, then merged. Many items need no split.
int64_t choose_key_splits(const AttentionArgs& a, int64_t num_seqs, int64_t num_items) {
    const int64_t threads = num_threads();
    if (num_items == 0 || num_items >= 2 * threads) return 1;
    int64_t max_keys = 0;
    for (int64_t s = 0; s < num_seqs; ++s) max_keys = std::max<int64_t>(max_keys, a.context_lens[s]);
    int64_t wanted = (2 * threads + num_items - 1) / num_items;
    return std::max<int64_t>(1, std::min(wanted, max_keys / kMinKeysPerSplit));
}

// Combines the splits' (o, m, l) of one tile: out = Σ o_s e^(m_s - M) / Σ l_s e^(m_s - M).
void merge_splits(const AttentionArgs& a, const AttentionTile& tile, const float* partials, int64_t splits) {
    const int64_t head_dim = a.cache.head_dim;
    const int64_t group = a.num_heads / a.cache.num_kv_heads;
    const int64_t rows_per_token = group * tile.kv_head_count;
    const int64_t stride = attention_partial_floats(head_dim);
    const int64_t m_at = partial_m_offset(head_dim), l_at = m_at + kTileRows;
    for (int64_t row = 0; row < tile.num_tokens * rows_per_token; ++row) {
        float max = -INFINITY;
        for (int64_t s = 0; s < splits; ++s) max = std::max(max, partials[s * stride + m_at + row]);
        int64_t token = a.cu_seqlens_q[tile.seq] + tile.token_begin + row / rows_per_token;
        int64_t head = tile.kv_head * group + row % rows_per_token;
        float* out = a.out + (token * a.num_heads + head) * head_dim;
        std::fill(out, out + head_dim, 0.0f);
        float total = 0.0f;
        for (int64_t s = 0; s < splits; ++s) {
            const float* p = partials + s * stride;
            if (p[l_at + row] == 0.0f) continue;  // no visible key in this split
            float weight = std::exp(p[m_at + row] - max);
            total += p[l_at + row] * weight;
            for (int64_t d = 0; d < head_dim; ++d) out[d] += p[row * head_dim + d] * weight;
        }
        for (int64_t d = 0; d < head_dim; ++d) out[d] /= total;
    }
}

// A thread's scratch for tiles of `heads_per_item` KV heads of `group` query heads each.
int64_t scratch_floats_per_thread(bool avx512, bool amx, int64_t head_dim, int64_t group,
                                  int64_t heads_per_item) {
    int64_t floats = attention_scratch_floats(head_dim);
    if (avx512) {
        floats = std::max(floats,
                          attention_decode_scratch_floats(head_dim, heads_per_item * group, heads_per_item));
        floats = std::max(floats, attention_prefill_bf16_scratch_floats(head_dim));
    } else {
        floats = std::max(floats, attention_avx2_scratch_floats(head_dim, heads_per_item * group));
    }
    if (amx) floats = std::max(floats, attention_prefill_amx_scratch_floats(head_dim));
    return floats;
}

// Whether prefill tiles on this cache run on AMX tiles at this ISA level (BF16, int8 and fp8
// caches: the tiles multiply BF16, which holds the bytes of the latter two exactly).
bool uses_amx_prefill(Isa isa, DType cache_dtype, int64_t head_dim) {
    return isa >= Isa::AmxBf16 && (cache_dtype == DType::BF16 || kv_dtype_is_scaled(cache_dtype)) &&
           attention_prefill_amx_supports(head_dim);
}

}  // namespace

void reserve_attention_workspace(int64_t head_dim, int64_t num_heads, int64_t num_kv_heads,
                                 int64_t max_num_seqs) {
    LMRUN_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0 && head_dim <= kMaxHeadDim,
                "attention shape out of the kernels' range");
    const int64_t group = num_heads / num_kv_heads;
    const bool avx512 = kernel_isa() >= Isa::Avx512 && attention_avx512_supports(head_dim);
    // The cache's dtype is not known here: AMX scratch whenever the ISA has it.
    const bool amx = uses_amx_prefill(kernel_isa(), DType::BF16, head_dim);
    // Items hold one KV head, or all of a sequence's (decode on AVX-512): the larger scratch wins.
    const int64_t scratch_floats =
        std::max(scratch_floats_per_thread(avx512, amx, head_dim, group, 1),
                 scratch_floats_per_thread(avx512, amx, head_dim, group, num_kv_heads));
#pragma omp parallel
    thread_scratch(scratch_floats);
    // Split-K runs only with fewer than 2T items (T threads), each cut into at most ceil(2T / items)
    // parts: items x splits < 4T partial results.
    partial_buffer(int64_t{4} * num_threads() * attention_partial_floats(head_dim));
    tile_start_buffer(max_num_seqs + 1);
}

void paged_attention_for_isa(Isa isa, const AttentionArgs& args, int64_t num_seqs) {
    AttentionArgs a = args;
    a.bf16_dot = isa >= Isa::Avx512Bf16 && cpu_features().avx512_bf16;
    a.int8_dot = isa >= Isa::Avx512Vnni && cpu_features().avx512_vnni;
    a.kv_prefetch_l2 = kv_prefetch_level() == KvPrefetchLevel::L2;
    const KvCacheLayer& cache = a.cache;
    LMRUN_CHECK(cache.num_kv_heads > 0 && a.num_heads % cache.num_kv_heads == 0,
                "num_heads %ld is not a multiple of num_kv_heads %ld", long(a.num_heads),
                long(cache.num_kv_heads));
    LMRUN_CHECK(cache.head_dim <= kMaxHeadDim, "head_dim %ld too large", long(cache.head_dim));
    LMRUN_CHECK(cache.dtype == DType::F32 || cache.dtype == DType::BF16 || kv_dtype_is_scaled(cache.dtype),
                "KV cache must be F32, BF16, I8 or F8E4M3");
    LMRUN_CHECK(!kv_dtype_is_scaled(cache.dtype) || (cache.k_scale && cache.v_scale),
                "scaled KV cache without scales");
    const int64_t group = a.num_heads / cache.num_kv_heads;
    LMRUN_CHECK(group <= kTileRows, "GQA group %ld too large", long(group));
    const bool all_decode = std::all_of(a.cu_seqlens_q, a.cu_seqlens_q + num_seqs,
                                        [&](const int32_t& begin) { return (&begin)[1] - begin == 1; });
    const bool amx = uses_amx_prefill(isa, cache.dtype, cache.head_dim) && !all_decode;
    // AMX prefill items of kAmxTileRows rows where that leaves at least two per thread (no
    // split-K, whose partial results hold kTileRows rows); else kTileRows.
    int64_t tokens_per_tile = (amx ? kAmxTileRows : kTileRows) / group;
    const std::vector<int64_t>* planned = &plan_tiles(a, num_seqs, tokens_per_tile);
    if (amx && (*planned)[num_seqs] * cache.num_kv_heads < int64_t{2} * num_threads()) {
        tokens_per_tile = kTileRows / group;
        planned = &plan_tiles(a, num_seqs, tokens_per_tile);
    }
    const std::vector<int64_t>& tile_starts = *planned;
    const bool avx512 = isa >= Isa::Avx512 && attention_avx512_supports(cache.head_dim);
    const bool avx2_whole = !avx512 && attention_avx2_supports(cache.head_dim);
    // A decode-only batch with decode tiles gives each item all KV heads of a sequence: their rows
    // are interleaved in the cache, so one item then reads one contiguous range per chunk. Few
    // sequences with short contexts (too short for split-K) stay per KV head, so that every
    // thread has work.
    const int64_t max_context =
        num_seqs > 0 ? *std::max_element(a.context_lens, a.context_lens + num_seqs) : 0;
    const bool enough_items = num_seqs >= int64_t{2} * num_threads() || max_context >= 2 * kMinKeysPerSplit;
    const bool whole_sequences =
        (avx512 || avx2_whole) && all_decode && a.num_heads <= kTileRows && enough_items;
    const int64_t heads_per_item = whole_sequences ? cache.num_kv_heads : 1;
    const int64_t kv_items = cache.num_kv_heads / heads_per_item;
    const int64_t num_items = tile_starts[num_seqs] * kv_items;
    const int64_t splits = choose_key_splits(a, num_seqs, num_items);
    float* partials =
        splits > 1 ? partial_buffer(num_items * splits * attention_partial_floats(cache.head_dim)) : nullptr;
    const int64_t scratch_floats =
        scratch_floats_per_thread(avx512, amx, cache.head_dim, group, heads_per_item);
    auto tile_of = [&](int64_t item) {
        int64_t tile_index = item / kv_items;
        int64_t seq = std::upper_bound(tile_starts.begin(), tile_starts.begin() + num_seqs + 1, tile_index) -
                      tile_starts.begin() - 1;
        int64_t q_len = a.cu_seqlens_q[seq + 1] - a.cu_seqlens_q[seq];
        int64_t token_begin = (tile_index - tile_starts[seq]) * tokens_per_tile;
        AttentionTile tile{seq, (item % kv_items) * heads_per_item, token_begin,
                           std::min(tokens_per_tile, q_len - token_begin)};
        tile.kv_head_count = heads_per_item;
        return tile;
    };

    auto run_split = [&](int64_t i, float* scratch) {
        // Reverse order: the last tiles of a sequence see the most keys; start them first.
        int64_t item = num_items - 1 - i / splits;
        AttentionTile tile = tile_of(item);
        if (splits > 1) {
            int64_t split = i % splits;
            int64_t q_len = a.cu_seqlens_q[tile.seq + 1] - a.cu_seqlens_q[tile.seq];
            int64_t keys = a.context_lens[tile.seq] - q_len + tile.token_begin + tile.num_tokens;
            tile.key_begin = keys * split / splits;
            tile.key_end = keys * (split + 1) / splits;
            tile.partial = partials + (item * splits + split) * attention_partial_floats(cache.head_dim);
        }
        const bool decode = is_decode_tile(a, tile);
        if (amx && !decode) {
            attention_prefill_tile_amx(a, tile, scratch);
        } else if (avx512) {
            attention_tile_avx512(a, tile, scratch);
        } else {
            attention_tile_avx2(a, tile, scratch);
        }
    };
    auto merge_item = [&](int64_t item) {
        merge_splits(a, tile_of(item), partials + item * splits * attention_partial_floats(cache.head_dim),
                     splits);
    };
    // One thread (a tensor-parallel rank per core): no OpenMP region, for which libgomp would
    // allocate a team on every call.
    if (omp_get_max_threads() == 1) {
        float* scratch = thread_scratch(scratch_floats);
        if (amx) configure_amx_tiles();
        for (int64_t i = 0; i < num_items * splits; ++i) run_split(i, scratch);
        if (amx) release_amx_tiles();
        for (int64_t item = 0; splits > 1 && item < num_items; ++item) merge_item(item);
        return;
    }
    // Dynamic schedule: tiles differ in cost (context length, causal position), and a long
    // prefill is many tiles, so no thread is stuck with one sequence.
#pragma omp parallel
    {
        float* scratch = thread_scratch(scratch_floats);
        if (amx) configure_amx_tiles();
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < num_items * splits; ++i) run_split(i, scratch);
        if (amx) release_amx_tiles();
        if (splits > 1) {
#pragma omp for schedule(dynamic, 1)
            for (int64_t item = 0; item < num_items; ++item) merge_item(item);
        }
    }
}

void paged_attention(const float* q, int64_t q_token_stride, int64_t num_seqs, const int32_t* cu_seqlens_q,
                     const int32_t* context_lens, const int32_t* block_tables, int64_t max_blocks_per_seq,
                     const KvCacheLayer& cache, int64_t num_heads, float scale, float* out) {
    AttentionArgs args{q,     q_token_stride, cu_seqlens_q, context_lens, block_tables, max_blocks_per_seq,
                       cache, num_heads,      scale,        out};
    paged_attention_for_isa(kernel_isa(), args, num_seqs);
}

}  // namespace lmrun::kernels
