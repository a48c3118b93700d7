// The AVX2 decode tile on a BF16 cache (one query token; the GQA group's heads as rows), for CPUs
// without a BF16 dot product (AMD Zen 3). Keys and values are read as they sit in the cache and
// unpacked in registers: vpunpck{l,h}wd against zero turns 16 BF16 values into two vectors of
// F32 (elements 0-3 and 8-11, then 4-7 and 12-15), which the FMAs take directly. The dot
// products do not care about that order if q is stored in it, and P·V sums its outputs in it,
// put back in head order once at the end of the tile (unpacked_order_avx2.h).
// The tile it replaces for this case (Avx2Tile, attention_avx2.cpp) widened every chunk's K and
// V rows to F32 in memory first (a load, two ALU ops and a store per 8 values) and then read
// them back for each row: per key and KV head about twice the instructions of the FMAs alone.
// Zen 5 at LMRUN_ISA=avx2, d=128, GQA 2: kernel_bench with the KV in cache 1.35-1.5x the widening
// tile's rate (37 → 50-57 GB/s); `lmrun bench`, 3 alternating rounds, paged attention per step
// at 128 tokens of context: batch 8 4.6 → 3.9 ms, 32 17.8-21.6 → 14.8-14.9, 64 34.8-39.1 →
// 30.2-30.6. At batch 8 with 2048 tokens, where the reads from DRAM decide, the rounds were
// mixed (56-58 → 41, 59, 62 ms).
// The next chunk's prefetch goes out a line or so per 16 dims of a key group and per value row
// of P·V (walk_decode_chunks_spread), not as a burst per KV head. On Zen 5 at LMRUN_ISA=avx2 a
// coarser spread (a few rows per key group) had made batch 8 at 2048 tokens 1.3x slower, but
// this tile only runs unforced on AVX2-only CPUs, and on one (Zen 3, EPYC family 25 model 1,
// KV from DRAM) the burst left the cores stalled on it: `lmrun bench --profile`, int8 weights,
// decode batch 8 at 4096 tokens, paged attention 211 → 157 ms per step (24 GB/s of KV on a
// machine whose probe read 27-30); kernel_bench, 3 alternating rounds, 1.05-1.29x per decode
// case except batch 1 at 128 tokens (0.81x, a few microseconds).
#include <immintrin.h>

#include "kernels/attention_softmax_avx2.h"
#include "kernels/attention_tile.h"
#include "kernels/attention_tile_driver.h"
#include "kernels/dispatch_constant.h"
#include "kernels/isa_local_math.h"
#include "kernels/unpacked_order_avx2.h"

namespace lmrun::kernels {
namespace {

// 16 BF16 values as F32: lo = elements 0-3 and 8-11, hi = 4-7 and 12-15.
inline void unpack16(const uint16_t* src, __m256& lo, __m256& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), v));
    hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), v));
}

template <int64_t D>
struct Bf16DecodeAvx2 {
    static_assert(D % 32 == 0);

    // scores[r][j] = q_r · key_j for R rows and the chunk's 16 keys, 8 dot products at a time
    // (8 / R keys x R rows, unreduced in 8 accumulators, folded by reduce8). Keys at or past
    // `count` score against the chunk's last key instead: in range, and masked by the softmax.
    template <int R>
    static void score_chunk(const float* q, const uint16_t* keys, int64_t stride, int64_t count,
                            float (*scores)[kKeyChunk], ChunkPrefetch& prefetch) {
        constexpr int kKeys = 8 / R;
        for (int64_t j0 = 0; j0 < kKeyChunk; j0 += kKeys) {
            const uint16_t* key[kKeys];
            for (int k = 0; k < kKeys; ++k) key[k] = keys + min_i64(j0 + k, count - 1) * stride;
            __m256 acc[8];  // acc[r * kKeys + k]
            for (__m256& a : acc) a = _mm256_setzero_ps();
            for (int64_t d = 0; d < D; d += 16) {
                prefetch.step();
                __m256 q_lo[R], q_hi[R];
                for (int r = 0; r < R; ++r) {
                    q_lo[r] = _mm256_loadu_ps(q + r * D + d);
                    q_hi[r] = _mm256_loadu_ps(q + r * D + d + 8);
                }
                for (int k = 0; k < kKeys; ++k) {
                    __m256 lo, hi;
                    unpack16(key[k] + d, lo, hi);
                    for (int r = 0; r < R; ++r) {
                        acc[r * kKeys + k] = _mm256_fmadd_ps(q_lo[r], lo, acc[r * kKeys + k]);
                        acc[r * kKeys + k] = _mm256_fmadd_ps(q_hi[r], hi, acc[r * kKeys + k]);
                    }
                }
            }
            alignas(32) float sums[8];
            _mm256_store_ps(sums, reduce8(acc));
            for (int i = 0; i < 8; ++i) scores[i / kKeys][j0 + i % kKeys] = sums[i];
        }
    }

    // Rows r < R (q scaled, in unpacked order) against the chunk's first `count` keys: the
    // online-softmax update of their m, l and o (unpacked order), P·V 32 outputs per pass.
    template <int R>
    static void attend_rows(const float* q, const uint16_t* keys, const uint16_t* values, int64_t stride,
                            int64_t count, ChunkPrefetch& chunk_prefetch, float* o, float* m, float* l) {
        ChunkPrefetch prefetch = chunk_prefetch;  // a local copy: its fields stay in registers
        alignas(32) float scores[R][kKeyChunk];
        score_chunk<R>(q, keys, stride, count, scores, prefetch);
        alignas(32) float probs[R][kKeyChunk];
        __m256 rescale[R];
        for (int r = 0; r < R; ++r) {
            __m256 p_lo, p_hi;
            const float correction = online_softmax16(
                _mm256_load_ps(scores[r]), _mm256_load_ps(scores[r] + 8), count, m[r], l[r], p_lo, p_hi);
            _mm256_store_ps(probs[r], p_lo);
            _mm256_store_ps(probs[r] + 8, p_hi);
            rescale[r] = _mm256_set1_ps(correction);
        }
        for (int64_t d0 = 0; d0 < D; d0 += 32) {
            __m256 acc[R][4];
            for (int r = 0; r < R; ++r)
                for (int64_t c = 0; c < 4; ++c)
                    acc[r][c] = _mm256_mul_ps(_mm256_loadu_ps(o + r * D + d0 + 8 * c), rescale[r]);
            for (int64_t j = 0; j < count; ++j) {
                prefetch.step();
                __m256 v[4];
                unpack16(values + j * stride + d0, v[0], v[1]);
                unpack16(values + j * stride + d0 + 16, v[2], v[3]);
                for (int r = 0; r < R; ++r) {
                    const __m256 p = _mm256_broadcast_ss(&probs[r][j]);
                    for (int64_t c = 0; c < 4; ++c) acc[r][c] = _mm256_fmadd_ps(p, v[c], acc[r][c]);
                }
            }
            for (int r = 0; r < R; ++r)
                for (int64_t c = 0; c < 4; ++c) _mm256_storeu_ps(o + r * D + d0 + 8 * c, acc[r][c]);
        }
        chunk_prefetch = prefetch;
    }

    // The prefetch steps attend_rows<R> takes at most: one per 16 dims of each of score_chunk's
    // 2R key groups, one per value row of each P·V pass (fewer when count < kKeyChunk).
    static constexpr int64_t steps_per_call(int R) { return 2 * int64_t(R) * D / 16 + D / 32 * kKeyChunk; }

    static int64_t scratch_floats(int64_t num_rows) { return 2 * num_rows * D + 2 * num_rows; }

    // Rows are the query heads of KV heads [w.kv_head, +w.kv_head_count) for the sequence's one
    // new token; a chunk's rows of one KV head stay in L1 while that head's rows read them.
    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t heads = w.kv_head_count;
        const int64_t num_rows = group * heads;
        const int64_t token = a.cu_seqlens_q[w.seq];
        const int64_t num_keys = min_i64(a.context_lens[w.seq], w.key_end);
        float* q = scratch;           // [num_rows][D], scaled, unpacked order
        float* o = q + num_rows * D;  // [num_rows][D], unpacked order
        float* m = o + num_rows * D;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        init_f32_rows<D>(a, token, first_head, num_rows, num_rows, q, o, m, l);
        reorder_rows<D>(q, num_rows);
        const int64_t stride = cache.num_kv_heads * D;
        const auto* k_cache = static_cast<const uint16_t*>(cache.k);
        const auto* v_cache = static_cast<const uint16_t*>(cache.v);
        walk_decode_chunks_spread(
            a, w, num_keys, [](int rows) { return steps_per_call(rows); }, [](int64_t, int64_t, int64_t) {},
            [&](int64_t r, auto rows, int64_t first, int64_t count, ChunkPrefetch& prefetch) {
                attend_rows<decltype(rows)::value>(q + r * D, k_cache + first, v_cache + first, stride, count,
                                                   prefetch, o + r * D, m + r, l + r);
            });
        reorder_rows<D>(o, num_rows);
        finish_f32_rows<D>(a, w, token, first_head, num_rows, num_rows, o, m, l);
    }
};

template <typename Fn>
bool dispatch_bf16_decode_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<32, 64, 128, 256>(head_dim, std::forward<Fn>(fn));
}

}  // namespace

int64_t attention_decode_bf16_avx2_scratch_floats(int64_t head_dim, int64_t num_rows) {
    int64_t floats = 0;
    dispatch_bf16_decode_head_dim(
        head_dim, [&](auto d) { floats = Bf16DecodeAvx2<decltype(d)::value>::scratch_floats(num_rows); });
    return floats;
}

bool attention_decode_tile_bf16_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    if (args.cache.dtype != DType::BF16) return false;
    return dispatch_bf16_decode_head_dim(
        args.cache.head_dim, [&](auto d) { Bf16DecodeAvx2<decltype(d)::value>::run(args, tile, scratch); });
}

}  // namespace lmrun::kernels
