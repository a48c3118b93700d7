// AVX2 attention, any cache dtype (F32, BF16, I8 and F8E4M3 rows widened to F32): for the usual
// head sizes (head_dim fixed at compile time) a decode tile (Avx2Tile, below; BF16 caches:
// attention_decode_bf16_avx2.cpp, int8 ones: attention_decode_int8_avx2.cpp) and a prefill tile
// (attention_prefill_avx2.cpp), and the generic tile (attention_tile_driver.h) with these vector ops for any
// other head_dim.
#include <immintrin.h>

#include <cstring>

#include "kernels/attention_softmax_avx2.h"
#include "kernels/attention_tile.h"
#include "kernels/attention_tile_driver.h"
#include "kernels/dispatch_constant.h"
#include "kernels/isa_local_math.h"
#include "kernels/kv_widen_avx2.h"
#include "kernels/vec_exp_avx2.h"

namespace lmrun::kernels {
namespace {

struct Avx2Ops {
    int64_t dim;

    int64_t head_dim() const { return dim; }

    // One cache row (head_dim elements from element `at` of `base`) as F32 (kv_widen_avx2.h).
    void widen(const void* base, DType dtype, int64_t at, float scale, float* dst) const {
        widen_kv_row_avx2(base, dtype, at, scale, dim, dst);
    }

    void copy_scaled(const float* src, float factor, float* dst) const {
        for (int64_t d = 0; d < dim; ++d) dst[d] = src[d] * factor;
    }

    void scale(float* o, float factor) const {
        for (int64_t d = 0; d < dim; ++d) o[d] *= factor;
    }

    float dot(const float* a, const float* b) const {
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t d = 0;
        for (; d + 16 <= dim; d += 16) {
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d + 8), _mm256_loadu_ps(b + d + 8), acc1);
        }
        for (; d + 8 <= dim; d += 8)
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc0);
        float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
        for (; d < dim; ++d) sum += a[d] * b[d];
        return sum;
    }

    // scores[row][j] = q_row · key_j for j < count; keys at `offset` + j·stride elements.
    void score_rows(const TileRows& t, int64_t num_rows, const void* keys, DType dtype, int64_t offset,
                    int64_t stride, int64_t count, const float* scales, int64_t scale_stride) const {
        for (int64_t j = 0; j < count; ++j) {
            const float* key = t.k_row;
            if (dtype == DType::F32) {
                key = static_cast<const float*>(keys) + offset + j * stride;
            } else {
                widen(keys, dtype, offset + j * stride, scales ? scales[j * scale_stride] : 1.0f, t.k_row);
            }
            for (int64_t row = 0; row < num_rows; ++row)
                t.scores[row * kKeyChunk + j] = dot(t.q + row * dim, key);
        }
    }

    // s[j] = e^(s[j] - max) for j < n ≤ kKeyChunk; returns Σ s[j].
    float exp_and_sum(float* s, int64_t n, float max) const {
        alignas(32) float padded[kKeyChunk];
        for (int64_t j = 0; j < kKeyChunk; ++j) padded[j] = j < n ? s[j] - max : -INFINITY;
        __m256 lo = exp_avx2(_mm256_load_ps(padded));
        __m256 hi = exp_avx2(_mm256_load_ps(padded + 8));
        _mm256_store_ps(padded, lo);
        _mm256_store_ps(padded + 8, hi);
        for (int64_t j = 0; j < n; ++j) s[j] = padded[j];
        return horizontal_sum(_mm256_add_ps(lo, hi));
    }

    void accumulate(float* o, const float* p, int64_t n, const float* values, int64_t stride) const {
        for (int64_t j = 0; j < n; ++j) {
            const float* v = values + j * stride;
            __m256 pj = _mm256_set1_ps(p[j]);
            int64_t d = 0;
            for (; d + 8 <= dim; d += 8)
                _mm256_storeu_ps(o + d, _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + d), _mm256_loadu_ps(o + d)));
            for (; d < dim; ++d) o[d] += p[j] * v[d];
        }
    }
};

// The decode tile for the usual head sizes on F32 and fp8 caches (BF16 and int8 ones have their own:
// attention_decode_bf16_avx2.cpp and attention_decode_int8_avx2.cpp; prefill: attention_prefill_avx2.cpp).
// Per chunk of 16 keys and per KV head, the keys and values are widened to F32 once (16 KiB, in L1) and used
// by every query row of that head; a row's 16 scores come from 16 unreduced dot products folded by reduce8,
// its softmax runs on two 8-lane vectors, and its o is updated 64 floats at a time in registers. Decode items
// hold a whole sequence's KV heads (attention.cpp), read chunk by chunk. kernel_bench, BF16 cache, d=128, 2
// threads, Sapphire Rapids at LMRUN_ISA=avx2, KV read at decode batch 8 (128 / 1024 / 4096 tokens of
// context): 17.5 / 17.5 / 14.7 GB/s, against 9.4 / 10.0 / 4.7 with the generic tile (per-key widening, dot
// and horizontal sum, o in memory) and 13.0 / 11.8 / 10.7 with all heads' chunk widened at once (128 KiB, out
// of L1).
template <int64_t D>
struct Avx2Tile {
    static constexpr int64_t kVecs = D / 8;
    static constexpr int64_t kPassVecs = kVecs < 8 ? kVecs : 8;  // of o held in registers

    // 8 keys' dot products with q, keys [8][D].
    static __m256 scores8(const float* q, const float* keys) {
        __m256 dots[8];
        for (auto& dot : dots) dot = _mm256_setzero_ps();
        for (int64_t c = 0; c < kVecs; ++c) {
            const __m256 qc = _mm256_loadu_ps(q + 8 * c);
            for (int64_t j = 0; j < 8; ++j)
                dots[j] = _mm256_fmadd_ps(qc, _mm256_loadu_ps(keys + j * D + 8 * c), dots[j]);
        }
        return reduce8(dots);
    }

    // One row against the first `count` keys of the chunk (keys [16][D]: the later ones are
    // masked out, and zero past the chunk's end): online-softmax update of its o, m, l.
    static void attend_row(const float* q, const float* keys, const float* values, int64_t count, float* o,
                           float& m, float& l) {
        __m256 p_lo, p_hi;
        const float correction =
            online_softmax16(scores8(q, keys), scores8(q, keys + 8 * D), count, m, l, p_lo, p_hi);
        alignas(32) float probs[kKeyChunk];
        _mm256_store_ps(probs, p_lo);
        _mm256_store_ps(probs + 8, p_hi);
        const __m256 rescale = _mm256_set1_ps(correction);
        for (int64_t c0 = 0; c0 < kVecs; c0 += kPassVecs) {
            __m256 acc[kPassVecs];
            for (int64_t c = 0; c < kPassVecs; ++c)
                acc[c] = _mm256_mul_ps(_mm256_loadu_ps(o + 8 * (c0 + c)), rescale);
            for (int64_t j = 0; j < count; ++j) {
                const __m256 pj = _mm256_set1_ps(probs[j]);
                for (int64_t c = 0; c < kPassVecs; ++c)
                    acc[c] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(values + j * D + 8 * (c0 + c)), acc[c]);
            }
            for (int64_t c = 0; c < kPassVecs; ++c) _mm256_storeu_ps(o + 8 * (c0 + c), acc[c]);
        }
    }

    // Widens `count` tokens' rows of KV head `kv_head` to F32 as out[j][D] (I8 / F8E4M3 times
    // their row scales); rows count..15 are zeroed. The same head's rows of the next chunk (from
    // next_slot, unless it is -1) are prefetched meanwhile (into L2 or L1: into_l2): one head's
    // rows are a whole token row apart, which the hardware prefetcher does not follow.
    static void widen_chunk(const KvCacheLayer& cache, const void* base, const float* scales, int64_t slot,
                            int64_t kv_head, int64_t count, int64_t next_slot, bool into_l2, float* out) {
        const Avx2Ops ops{D};
        const int64_t row_bytes = D * int64_t(dtype_size_bytes(cache.dtype));
        for (int64_t j = 0; j < count; ++j) {
            if (next_slot >= 0) {
                const char* next = static_cast<const char*>(base) +
                                   ((next_slot + j) * cache.num_kv_heads + kv_head) * row_bytes;
                for (int64_t line = 0; line < row_bytes; line += 64) prefetch_kv_line(next + line, into_l2);
            }
            const int64_t cache_row = (slot + j) * cache.num_kv_heads + kv_head;
            if (cache.dtype == DType::F32) {
                std::memcpy(out + j * D, static_cast<const float*>(base) + cache_row * D, D * sizeof(float));
            } else {
                ops.widen(base, cache.dtype, cache_row * D, scales ? scales[cache_row] : 1.0f, out + j * D);
            }
        }
        if (count < kKeyChunk)
            std::memset(out + count * D, 0, size_t((kKeyChunk - count) * D) * sizeof(float));
    }

    static int64_t scratch_floats(int64_t num_rows) {
        return 2 * kKeyChunk * D + 2 * num_rows * D + 2 * num_rows;
    }

    // A decode tile: rows are the query heads of KV heads [w.kv_head, +w.kv_head_count) for its
    // one token, which sees every key of the item's range.
    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t heads = w.kv_head_count;
        const int64_t num_rows = group * heads;
        const int64_t token = a.cu_seqlens_q[w.seq];
        const int64_t num_keys = min_i64(a.context_lens[w.seq], w.key_end);
        float* k_chunk = scratch;                  // [16][D]
        float* v_chunk = k_chunk + kKeyChunk * D;  // [16][D]
        float* q = v_chunk + kKeyChunk * D;        // [num_rows][D], scaled
        float* o = q + num_rows * D;               // [num_rows][D]
        float* m = o + num_rows * D;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        init_f32_rows<D>(a, token, first_head, num_rows, num_rows, q, o, m, l);
        const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
        for (int64_t key0 = w.key_begin; key0 < num_keys;) {
            const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
            const int64_t next_key = key0 + count;
            const int64_t next_slot =
                next_key < num_keys ? key_chunk(cache, blocks, next_key, num_keys).slot : -1;
            for (int64_t h = 0; h < heads; ++h) {
                widen_chunk(cache, cache.k, cache.k_scale, slot, w.kv_head + h, count, next_slot,
                            a.kv_prefetch_l2, k_chunk);
                widen_chunk(cache, cache.v, cache.v_scale, slot, w.kv_head + h, count, next_slot,
                            a.kv_prefetch_l2, v_chunk);
                for (int64_t r = h * group; r < (h + 1) * group; ++r)
                    attend_row(q + r * D, k_chunk, v_chunk, count, o + r * D, m[r], l[r]);
            }
            key0 += count;
        }
        finish_f32_rows<D>(a, w, token, first_head, num_rows, num_rows, o, m, l);
    }
};

template <typename Fn>
bool dispatch_tile_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<16, 32, 64, 128, 256>(head_dim, std::forward<Fn>(fn));
}

}  // namespace

bool attention_avx2_supports(int64_t head_dim) {
    return dispatch_tile_head_dim(head_dim, [](auto) {});
}

int64_t attention_avx2_scratch_floats(int64_t head_dim, int64_t num_rows) {
    const int64_t rows = max_i64(num_rows, kTileRows);
    int64_t floats = max_i64(attention_scratch_floats(head_dim),
                             attention_decode_bf16_avx2_scratch_floats(head_dim, rows));
    floats = max_i64(floats, attention_decode_int8_avx2_scratch_floats(head_dim, rows));
    floats = max_i64(floats, attention_prefill_avx2_scratch_floats(head_dim));
    dispatch_tile_head_dim(head_dim, [&](auto d) {
        floats = max_i64(floats, Avx2Tile<decltype(d)::value>::scratch_floats(rows));
    });
    return floats;
}

void attention_tile_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    const bool decode = is_decode_tile(args, tile);
    if (decode && attention_decode_tile_int8_avx2(args, tile, scratch)) return;
    if (decode && attention_decode_tile_bf16_avx2(args, tile, scratch)) return;
    if (decode
            ? dispatch_tile_head_dim(args.cache.head_dim,
                                     [&](auto d) { Avx2Tile<decltype(d)::value>::run(args, tile, scratch); })
            : attention_prefill_tile_avx2(args, tile, scratch))
        return;
    attention_tile(Avx2Ops{args.cache.head_dim}, args, tile, scratch);  // any other head_dim
}

}  // namespace lmrun::kernels
