// Internal to paged attention: the work item (one query tile of one sequence and one KV head:
// every query head of that KV head's GQA group, for up to kTileRows (token, head) rows) and the
// per-ISA tile functions. attention.cpp schedules the tiles over threads and owns the scratch.
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include "core/cpu_features.h"
#include "kernels/attention.h"
#include "kernels/kv_prefetch_level.h"

namespace lmrun::kernels {

inline constexpr int64_t kTileRows = 64;  // (token, head) rows per work item
// Rows per work item of the AMX prefill tiles when that still gives every thread work: each
// item lays out its keys and values as tiles once, for four times the rows.
inline constexpr int64_t kAmxTileRows = 256;
inline constexpr int64_t kKeyChunk = 16;     // keys scored together (one 16-lane vector)
inline constexpr int64_t kMaxHeadDim = 256;  // largest head_dim the scratch is sized for

struct AttentionArgs {
    const float* q;
    int64_t q_token_stride;
    const int32_t* cu_seqlens_q;
    const int32_t* context_lens;
    const int32_t* block_tables;
    int64_t max_blocks_per_seq;
    KvCacheLayer cache;
    int64_t num_heads;
    float scale;
    float* out;
    // BF16 caches may use AVX512_BF16 dot products (q and p rounded to BF16); set from the ISA
    // level paged_attention_for_isa runs at.
    bool bf16_dot = false;
    // Decode on I8 caches may use AVX512_VNNI integer dot products (q and p quantized to 16-bit
    // integers); set from the ISA level as bf16_dot is.
    bool int8_dot = false;
    // Decode tiles prefetch the next key chunk into L2 instead of L1 (kv_prefetch_level.h); set
    // by paged_attention_for_isa.
    bool kv_prefetch_l2 = false;
};

inline constexpr int64_t kMinKeysPerSplit = 256;  // smallest key range worth its own work item

// Keys [key_begin, key_end) of the tile's causal range (clipped to it). With `partial` set the
// tile stores its unnormalised state instead of the output: o [kTileRows, head_dim], then
// m [kTileRows], then l [kTileRows] (attention_partial_floats), merged later over the splits.
struct AttentionTile {
    int64_t seq, kv_head, token_begin, num_tokens;
    int64_t key_begin = 0;
    int64_t key_end = INT64_MAX;
    float* partial = nullptr;
    // KV heads [kv_head, kv_head + kv_head_count): more than one only for decode tiles (AVX-512,
    // and AVX2 for the usual head sizes), which then read all heads' rows of each chunk.
    int64_t kv_head_count = 1;
};

// A decode tile: the one new token of a sequence that has only that token in the batch.
inline bool is_decode_tile(const AttentionArgs& a, const AttentionTile& tile) {
    return tile.num_tokens == 1 && a.cu_seqlens_q[tile.seq + 1] - a.cu_seqlens_q[tile.seq] == 1;
}

// The keys a tile reads together from key0 on: at most kKeyChunk, inside one cache block, before
// num_keys; `slot` is the first one's cache slot (blocks: the sequence's block table).
struct KeyChunk {
    int64_t slot;
    int64_t count;
};
namespace {  // ISA-specific units include this (why: isa_local_math.h)
inline KeyChunk key_chunk(const KvCacheLayer& cache, const int32_t* blocks, int64_t key0, int64_t num_keys) {
    const int64_t offset = key0 % cache.block_size;
    const int64_t in_block = cache.block_size - offset < kKeyChunk ? cache.block_size - offset : kKeyChunk;
    return {int64_t(blocks[key0 / cache.block_size]) * cache.block_size + offset,
            in_block < num_keys - key0 ? in_block : num_keys - key0};
}

// The chunk after the one at key0 (`count` keys), or {0, 0} when that one is the last.
inline KeyChunk next_key_chunk(const KvCacheLayer& cache, const int32_t* blocks, int64_t key0, int64_t count,
                               int64_t num_keys) {
    return key0 + count < num_keys ? key_chunk(cache, blocks, key0 + count, num_keys) : KeyChunk{0, 0};
}

// One line of KV a tile reads soon, into L2 or L1 (kv_prefetch_level.h).
inline void prefetch_kv_line(const void* line, bool into_l2) {
    if (into_l2) {
        __builtin_prefetch(line, 0, 2);  // prefetcht1
    } else {
        __builtin_prefetch(line, 0, 3);  // prefetcht0
    }
}

// Where the next chunk's K and V rows of heads [kv_head, kv_head + kv_head_count) lie: `first`
// bytes into each cache, a token row every token_bytes, token_lines cache lines of it wanted.
struct ChunkLines {
    int64_t first, token_bytes, token_lines;
};
inline ChunkLines chunk_lines(const KvCacheLayer& cache, KeyChunk next, int64_t kv_head,
                              int64_t kv_head_count) {
    const int64_t head_bytes = cache.head_dim * int64_t(dtype_size_bytes(cache.dtype));
    const int64_t token_bytes = cache.num_kv_heads * head_bytes;
    return {next.slot * token_bytes + kv_head * head_bytes, token_bytes,
            (kv_head_count * head_bytes + 63) / 64};
}

// Decode tiles walk a chunk one KV head at a time, and each head's rows are a whole token row
// apart, which the hardware prefetcher does not follow. So the next chunk's K and V rows of heads
// [kv_head, kv_head + kv_head_count) are prefetched (into L1 or L2: into_l2) in address order, the part'th of
// `parts` shares while the part'th head of this chunk is computed: spread, the prefetches do not
// fill the line-fill buffers at once. Engine, Sapphire Rapids VM, int8 weights, paged attention
// per step in alternating runs on two noisy hours: BF16 cache, batch 64 at 128 tokens of context
// 66-76 → 55-69 ms, batch 8 at 4096 tokens 218-284 → 205-263 ms; int8 cache (VNNI tile, which
// has since moved to ChunkPrefetch below), batch 64: 42 → 33 ms. Prefetched into L2 instead: less
// of the gain there (batch 8, 4096: 220-226 ms), but 1.5-2x on Zen 4 (kv_prefetch_level.h).
inline void prefetch_next_chunk_part(const KvCacheLayer& cache, KeyChunk next, int64_t kv_head,
                                     int64_t kv_head_count, int64_t part, int64_t parts, bool into_l2) {
    if (next.count <= 0) return;
    const auto [first, token_bytes, token_lines] = chunk_lines(cache, next, kv_head, kv_head_count);
    const int64_t lines = next.count * token_lines;
    const int64_t begin = lines * part / parts, end = lines * (part + 1) / parts;
    for (const void* base : {cache.k, cache.v}) {
        const char* chunk = static_cast<const char*>(base) + first;
        int64_t token = begin / token_lines, line = begin % token_lines;
        for (int64_t i = begin; i < end; ++i) {
            prefetch_kv_line(chunk + token * token_bytes + 64 * line, into_l2);
            if (++line == token_lines) line = 0, ++token;
        }
    }
}

// The walk of the decode tiles that read the cache where it is: each key chunk of the item, each
// of its KV heads in address order (the next chunk's share prefetched at each head), then that
// head's query rows, two at a time where two remain (and `pairs`). head_chunk(slot, count, head)
// runs once per chunk and KV head before its rows; attend(r, rows, first, count) attends rows
// [r, r + rows) to the chunk's `count` keys (rows a std::integral_constant of 1 or 2), `first`
// the element offset of the head's row in the chunk's first slot.
template <typename HeadChunk, typename Attend>
inline void walk_decode_chunks(const AttentionArgs& a, const AttentionTile& w, int64_t num_keys, bool pairs,
                               HeadChunk&& head_chunk, Attend&& attend) {
    const KvCacheLayer& cache = a.cache;
    const int64_t group = a.num_heads / cache.num_kv_heads;
    const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
    for (int64_t key0 = w.key_begin; key0 < num_keys;) {
        const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
        const KeyChunk next = next_key_chunk(cache, blocks, key0, count, num_keys);
        for (int64_t h = 0; h < w.kv_head_count; ++h) {
            prefetch_next_chunk_part(cache, next, w.kv_head, w.kv_head_count, h, w.kv_head_count,
                                     a.kv_prefetch_l2);
            const int64_t head = w.kv_head + h;
            head_chunk(slot, count, head);
            const int64_t first = (slot * cache.num_kv_heads + head) * cache.head_dim;
            for (int64_t r = h * group; r < (h + 1) * group;) {
                if (pairs && (h + 1) * group - r >= 2) {
                    attend(r, std::integral_constant<int, 2>{}, first, count);
                    r += 2;
                } else {
                    attend(r, std::integral_constant<int, 1>{}, first, count);
                    r += 1;
                }
            }
        }
        key0 += count;
    }
}

// The same prefetch of the next chunk, issued from inside a tile's key loop a K and V line pair
// (or a few) at a time: `steps` calls of step() over the chunk issue all of it, in address order.
// Set up once per chunk and walked by pointer; the per-head form above spends about seven
// instructions per line on index arithmetic and divides once per head. Int8 VNNI tile, Zen 5
// VM, d=128, GQA 2: KV in L2, one thread, 11-12 against 13 ns per key and KV head; `lmrun bench`,
// int8 weights and KV, batch 8 at 4096 tokens, 3 alternating rounds: paged attention 57-62
// against 65-97 ms per step. (The BF16 tile measured slower with it: README.)
// The lines are spread evenly over the steps (a 32.32 fixed-point rate, as NextChunkPrefetch
// does): a whole number of lines per step, rounded up, had the AVX2 BF16 tile (512 line pairs
// over 768 steps at d=128, 8 KV heads) issue one pair per step and be done two thirds into the
// chunk. Zen 3, 2 threads, KV from DRAM, both forms in one process alternating: BF16 cache
// 1.10-1.18x per decode case (batch 1 at 1024 and 4096 tokens, 8 at 128 and 4096, 32 and 64 at
// 128); the int8 tiles' counts divide evenly (256 lines over 64 steps on AVX2, 128 on AVX-512
// VNNI, for Qwen3-0.6B's shape and power-of-two ones generally): unchanged. Bunching the
// same lines into fewer steps (2x or 4x the rate) measured 0.63-0.81x, and issuing them in the
// order the tile reads them (head by head) instead of by address 0.54-0.71x.
class ChunkPrefetch {
  public:
    ChunkPrefetch() = default;
    ChunkPrefetch(const KvCacheLayer& cache, KeyChunk next, int64_t kv_head, int64_t kv_head_count,
                  int64_t steps, bool into_l2)
        : into_l2_(into_l2) {
        if (next.count <= 0) return;
        const auto [first, token_bytes, token_lines] = chunk_lines(cache, next, kv_head, kv_head_count);
        token_lines_ = token_lines;
        token_skip_ = token_bytes - 64 * token_lines;
        left_ = next.count * token_lines;
        // Rounded up: the last of `steps` steps issues the last line.
        lines_per_step_ = steps > 0 ? ((uint64_t(left_) << 32) + uint64_t(steps) - 1) / uint64_t(steps)
                                    : uint64_t(left_) << 32;
        k_ = static_cast<const char*>(cache.k) + first;
        v_ = static_cast<const char*>(cache.v) + first;
    }
    void step() {
        const int64_t due_before = int64_t(due_ >> 32);  // issued by the steps before
        due_ += lines_per_step_;
        for (int64_t i = due_before; i < int64_t(due_ >> 32) && left_ > 0; ++i, --left_) {
            prefetch_kv_line(k_, into_l2_);
            prefetch_kv_line(v_, into_l2_);
            k_ += 64, v_ += 64;
            if (++line_ == token_lines_) line_ = 0, k_ += token_skip_, v_ += token_skip_;
        }
    }

  private:
    const char* k_ = nullptr;
    const char* v_ = nullptr;
    int64_t line_ = 0, token_lines_ = 0, token_skip_ = 0, left_ = 0;
    uint64_t lines_per_step_ = 0, due_ = 0;  // 32.32 fixed point: lines per step, lines due so far
    bool into_l2_ = false;
};

// walk_decode_chunks with the next chunk's prefetch issued from inside the tile's calls
// (ChunkPrefetch) instead of a burst per KV head: attend(r, rows, first, count, prefetch) calls
// prefetch.step() steps_of(rows) times (rows an int). Int8 AVX2 tile, Zen 3, kernel_bench, KV
// from DRAM, 3 alternating rounds: 1.37-2.1x less time per decode case than the burst per head.
template <typename StepsOf, typename HeadChunk, typename Attend>
inline void walk_decode_chunks_spread(const AttentionArgs& a, const AttentionTile& w, int64_t num_keys,
                                      StepsOf&& steps_of, HeadChunk&& head_chunk, Attend&& attend) {
    const KvCacheLayer& cache = a.cache;
    const int64_t group = a.num_heads / cache.num_kv_heads;
    const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
    const int64_t steps_per_head = group / 2 * steps_of(2) + group % 2 * steps_of(1);
    for (int64_t key0 = w.key_begin; key0 < num_keys;) {
        const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
        ChunkPrefetch prefetch(cache, next_key_chunk(cache, blocks, key0, count, num_keys), w.kv_head,
                               w.kv_head_count, w.kv_head_count * steps_per_head, a.kv_prefetch_l2);
        for (int64_t h = 0; h < w.kv_head_count; ++h) {
            const int64_t head = w.kv_head + h;
            head_chunk(slot, count, head);
            const int64_t first = (slot * cache.num_kv_heads + head) * cache.head_dim;
            for (int64_t r = h * group; r < (h + 1) * group;) {
                if ((h + 1) * group - r >= 2) {
                    attend(r, std::integral_constant<int, 2>{}, first, count, prefetch);
                    r += 2;
                } else {
                    attend(r, std::integral_constant<int, 1>{}, first, count, prefetch);
                    r += 1;
                }
            }
        }
        key0 += count;
    }
}
}  // namespace

inline int64_t attention_partial_floats(int64_t head_dim) {
    return kTileRows * (head_dim + 2);
}

// Where the rows' m start in the partial layout above; their l follow, kTileRows later.
inline int64_t partial_m_offset(int64_t head_dim) {
    return kTileRows * head_dim;
}

// The running max `m` and sum `l` of a row's softmax in the partial layout above (the row's o is
// the tile's own to store: each tile keeps it in its own form).
inline void store_partial_softmax_state(float* partial, int64_t head_dim, int64_t row, float m, float l) {
    partial[partial_m_offset(head_dim) + row] = m;
    partial[partial_m_offset(head_dim) + kTileRows + row] = l;
}

// Floats of per-thread scratch a tile function needs.
inline int64_t attention_scratch_floats(int64_t head_dim) {
    return 2 * kTileRows * head_dim + 2 * kTileRows + head_dim + kKeyChunk * head_dim + kTileRows * kKeyChunk;
}

// AVX2 tiles, any cache dtype. For head_dim 16, 32, 64, 128 or 256 (attention_avx2_supports) a
// decode tile may hold several KV heads; other head sizes take one KV head per tile.
bool attention_avx2_supports(int64_t head_dim);
void attention_tile_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
// Scratch floats of an AVX2 tile of up to max(num_rows, kTileRows) rows.
int64_t attention_avx2_scratch_floats(int64_t head_dim, int64_t num_rows);
// The AVX2 decode tile that unpacks a BF16 cache in registers, for head_dim 32, 64, 128 or 256
// (false: another dtype or head_dim, nothing done); its scratch floats for num_rows rows (0 for other
// head sizes).
bool attention_decode_tile_bf16_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
int64_t attention_decode_bf16_avx2_scratch_floats(int64_t head_dim, int64_t num_rows);
// The AVX2 decode tile on an I8 cache with integer dot products (vpmaddwd), for head_dim 32, 64,
// 128 or 256 (false: another dtype or head_dim, nothing done); its scratch floats for num_rows
// rows (0 for other head sizes).
bool attention_decode_tile_int8_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
int64_t attention_decode_int8_avx2_scratch_floats(int64_t head_dim, int64_t num_rows);
// The AVX2 prefill tile (one KV head, up to kTileRows rows, any cache dtype), for head_dim 16,
// 32, 64, 128 or 256 (false: another head_dim or tile, nothing done); its scratch floats (0 for
// other head sizes).
bool attention_prefill_tile_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
int64_t attention_prefill_avx2_scratch_floats(int64_t head_dim);
// head_dim is specialised at compile time for AVX-512 (16, 32, 64, 128, 256); others use AVX2.
bool attention_avx512_supports(int64_t head_dim);
void attention_tile_avx512(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
// Prefill tiles (one KV head) on a BF16 cache with AVX512_BF16 GEMM-shaped math; head_dim 32,
// 64, 128 or 256 (the AVX-512 head sizes that are multiples of 32).
void attention_prefill_tile_bf16(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
int64_t attention_prefill_bf16_scratch_floats(int64_t head_dim);
// Prefill tiles (one KV head) on a BF16, I8 or F8E4M3 cache with AMX-BF16 (head_dim 32, 64, 128
// or 256); the calling thread has loaded the AMX tile configuration (linear_amx.h).
bool attention_prefill_amx_supports(int64_t head_dim);
void attention_prefill_tile_amx(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
int64_t attention_prefill_amx_scratch_floats(int64_t head_dim);
// Decode tiles (one KV head or several) on an I8 cache with AVX512_VNNI, for head_dim 16, 32,
// 64, 128 or 256.
void attention_decode_tile_int8_vnni(const AttentionArgs& args, const AttentionTile& tile, float* scratch);
int64_t attention_decode_int8_vnni_scratch_floats(int64_t head_dim, int64_t num_rows);
// Scratch floats of an AVX-512 decode tile of `num_rows` query heads over `kv_heads` KV heads.
int64_t attention_decode_scratch_floats(int64_t head_dim, int64_t num_rows, int64_t kv_heads);

// paged_attention with the tile functions of a given ISA level (tests cover each level).
void paged_attention_for_isa(Isa isa, const AttentionArgs& args, int64_t num_seqs);

}  // namespace lmrun::kernels
