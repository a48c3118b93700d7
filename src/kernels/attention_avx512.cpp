// AVX-512 vector ops for the attention tile (attention_tile_driver.h), with head_dim a
// compile-time constant so each row lives in D/16 registers.

#include "kernels/avx512_intrinsics.h"

#include "kernels/attention_bf16_lanes.h"
#include "kernels/attention_reduce_avx512.h"
#include "kernels/attention_tile.h"
#include "kernels/attention_tile_driver.h"
#include "kernels/dispatch_constant.h"
#include "kernels/kv_bytes_avx512.h"
#include "kernels/online_softmax_avx512.h"
#include "kernels/vec_exp_avx512.h"

namespace lmrun::kernels {
namespace {

template <int64_t D>
struct Avx512Ops {
    static_assert(D % 16 == 0);
    static constexpr int64_t kVecs = D / 16;

    int64_t head_dim() const { return D; }

    static __m512 widen16(const uint16_t* src) {
        __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }

    // 16 elements of element `at` of a cache as F32: BF16 widened, I8 / F8E4M3 times `scale`.
    static __m512 load16(const void* base, DType dtype, int64_t at, float scale) {
        if (dtype == DType::F32) return _mm512_loadu_ps(static_cast<const float*>(base) + at);
        if (dtype == DType::BF16) return widen16(static_cast<const uint16_t*>(base) + at);
        const uint8_t* src = static_cast<const uint8_t*>(base) + at;
        const bool fp8 = dtype == DType::F8E4M3;
        return _mm512_mul_ps(bytes16(src, fp8), _mm512_set1_ps(fp8 ? scale * 256.0f : scale));
    }

    void widen(const void* base, DType dtype, int64_t at, float scale, float* dst) const {
        for (int64_t c = 0; c < kVecs; ++c)
            _mm512_storeu_ps(dst + 16 * c, load16(base, dtype, at + 16 * c, scale));
    }

    void copy_scaled(const float* src, float factor, float* dst) const {
        __m512 f = _mm512_set1_ps(factor);
        for (int64_t c = 0; c < kVecs; ++c)
            _mm512_storeu_ps(dst + 16 * c, _mm512_mul_ps(_mm512_loadu_ps(src + 16 * c), f));
    }

    void scale(float* o, float factor) const { copy_scaled(o, factor, o); }

    // scores[row][j] = q_row · key_j for j < count; keys at `offset` + j·stride elements. Each
    // key is loaded (BF16 widened) into registers once and used by every row of the tile; two
    // accumulators per dot product halve the FMA dependency chain.
    void score_rows(const TileRows& t, int64_t num_rows, const void* keys, DType dtype, int64_t offset,
                    int64_t stride, int64_t count, const float* scales, int64_t scale_stride) const {
        for (int64_t j = 0; j < count; ++j) {
            __m512 key[kVecs];
            const float scale = scales ? scales[j * scale_stride] : 1.0f;
            for (int64_t c = 0; c < kVecs; ++c)
                key[c] = load16(keys, dtype, offset + j * stride + 16 * c, scale);
            for (int64_t row = 0; row < num_rows; ++row) {
                const float* q = t.q + row * D;
                __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
                for (int64_t c = 0; c + 1 < kVecs; c += 2) {
                    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * c), key[c], acc0);
                    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + 16 * c + 16), key[c + 1], acc1);
                }
                if (kVecs % 2) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + D - 16), key[kVecs - 1], acc0);
                t.scores[row * kKeyChunk + j] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
            }
        }
    }

    float exp_and_sum(float* s, int64_t n, float max) const {
        __mmask16 mask = __mmask16((1u << n) - 1);
        __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, s), _mm512_set1_ps(max));
        __m512 e = _mm512_maskz_mov_ps(mask, exp_avx512(x));
        _mm512_mask_storeu_ps(s, mask, e);
        return _mm512_reduce_add_ps(e);
    }

    void accumulate(float* o, const float* p, int64_t n, const float* values, int64_t stride) const {
        __m512 acc[kVecs];
        for (int64_t c = 0; c < kVecs; ++c) acc[c] = _mm512_loadu_ps(o + 16 * c);
        for (int64_t j = 0; j < n; ++j) {
            __m512 pj = _mm512_set1_ps(p[j]);
            for (int64_t c = 0; c < kVecs; ++c)
                acc[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(values + j * stride + 16 * c), acc[c]);
        }
        for (int64_t c = 0; c < kVecs; ++c) _mm512_storeu_ps(o + 16 * c, acc[c]);
    }
};

// Decode tiles (one query token, the GQA group's heads as rows): every row sees the same keys,
// so a chunk of 16 keys is widened to F32 once, scored for all rows as 16 unreduced dot
// products folded by reduce16, and the softmax runs on whole 16-lane vectors. The generic tile
// (per-key horizontal sums, per-row scalar softmax) spent ~300 cycles per key and KV head here.
template <int64_t D>
struct DecodeTile {
    static constexpr int64_t kVecs = D / 16;

    // One row (query head) against `count` keys: online-softmax update of its o, m, l.
    static void attend_row(const float* q, const float* keys, int64_t k_stride, const float* values,
                           int64_t v_stride, int64_t count, float* o, float* m, float* l) {
        const __mmask16 valid = __mmask16((1u << count) - 1);
        __m512 qr[kVecs];
        for (int64_t c = 0; c < kVecs; ++c) qr[c] = _mm512_loadu_ps(q + 16 * c);
        __m512 dots[16];
        for (int64_t j = 0; j < 16; ++j) {
            __m512 acc = _mm512_setzero_ps();
            if (j < count)
                for (int64_t c = 0; c < kVecs; ++c)
                    acc = _mm512_fmadd_ps(qr[c], _mm512_loadu_ps(keys + j * k_stride + 16 * c), acc);
            dots[kReducePerm[j]] = acc;
        }
        float correction;
        const __m512 p = online_softmax_update(reduce16(dots), valid, *m, *l, correction);
        alignas(64) float probs[16];
        _mm512_store_ps(probs, p);
        __m512 acc[kVecs];
        const __m512 scale = _mm512_set1_ps(correction);
        for (int64_t c = 0; c < kVecs; ++c) acc[c] = _mm512_mul_ps(_mm512_loadu_ps(o + 16 * c), scale);
        for (int64_t j = 0; j < count; ++j) {
            const __m512 pj = _mm512_set1_ps(probs[j]);
            for (int64_t c = 0; c < kVecs; ++c)
                acc[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(values + j * v_stride + 16 * c), acc[c]);
        }
        for (int64_t c = 0; c < kVecs; ++c) _mm512_storeu_ps(o + 16 * c, acc[c]);
    }

    // Widens `count` tokens' rows of KV heads [first_head, first_head + heads) to F32 as
    // out[h][j][D], in address order (a token's heads are adjacent). run() widens one head at a
    // time: the chunk then stays in L1 (16 KiB at d=128) while that head's rows read it, where
    // all 8 heads' chunk (128 KiB) did not (kernel_bench at LMRUN_ISA=avx512, BF16 cache, decode:
    // KV read 11-12 → 16-17.5 GB/s).
    static void widen_chunk(const KvCacheLayer& cache, const void* base, int64_t slot, int64_t first_head,
                            int64_t heads, int64_t count, float* out) {
        const int64_t row = cache.num_kv_heads * D;
        for (int64_t j = 0; j < count; ++j) {
            for (int64_t h = 0; h < heads; ++h) {
                const int64_t at = (slot + j) * row + (first_head + h) * D;
                float* dst = out + (h * kKeyChunk + j) * D;
                if (cache.dtype == DType::F32) {
                    const float* src = static_cast<const float*>(base) + at;
                    for (int64_t c = 0; c < kVecs; ++c)
                        _mm512_storeu_ps(dst + 16 * c, _mm512_loadu_ps(src + 16 * c));
                } else {
                    const uint16_t* src = static_cast<const uint16_t*>(base) + at;
                    for (int64_t c = 0; c < kVecs; ++c)
                        _mm512_storeu_ps(dst + 16 * c, Avx512Ops<D>::widen16(src + 16 * c));
                }
            }
        }
    }

    static int64_t scratch_floats(int64_t num_rows, int64_t heads) {
        return 2 * heads * kKeyChunk * D + 2 * num_rows * D + 2 * num_rows;
    }

    // Rows are the query heads of KV heads [w.kv_head, w.kv_head + w.kv_head_count).
    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t heads = w.kv_head_count;
        const int64_t num_rows = group * heads;
        const int64_t token = a.cu_seqlens_q[w.seq];
        const int64_t num_keys = w.key_end < a.context_lens[w.seq] ? w.key_end : a.context_lens[w.seq];
        float* k_chunk = scratch;                          // [heads][16][D]
        float* v_chunk = k_chunk + heads * kKeyChunk * D;  // [heads][16][D]
        float* q = v_chunk + heads * kKeyChunk * D;        // [num_rows][D], scaled
        float* o = q + num_rows * D;                       // [num_rows][D]
        float* m = o + num_rows * D;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        init_f32_rows<D>(a, token, first_head, num_rows, num_rows, q, o, m, l);
        const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
        for (int64_t key0 = w.key_begin; key0 < num_keys;) {
            const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
            const KeyChunk next = next_key_chunk(cache, blocks, key0, count, num_keys);
            for (int64_t h = 0; h < heads; ++h) {
                prefetch_next_chunk_part(cache, next, w.kv_head, heads, h, heads, a.kv_prefetch_l2);
                widen_chunk(cache, cache.k, slot, w.kv_head + h, 1, count, k_chunk);
                widen_chunk(cache, cache.v, slot, w.kv_head + h, 1, count, v_chunk);
                for (int64_t r = h * group; r < (h + 1) * group; ++r) {
                    attend_row(q + r * D, k_chunk, D, v_chunk, D, count, o + r * D, m + r, l + r);
                }
            }
            key0 += count;
        }
        finish_f32_rows<D>(a, w, token, first_head, num_rows, num_rows, o, m, l);
    }
};

// The BF16-cache decode tile with AVX512_BF16 dot products, as flash attention does on GPUs:
// q and the softmax weights p are rounded to BF16, every product is summed in F32. Keys are
// read as they sit in the cache (no widening): one vdpbf16ps covers 32 of head_dim. For P·V a
// pair of keys is interleaved (vpunpck{l,h}wd) so one vdpbf16ps adds p_j·v_j + p_j+1·v_j+1;
// the interleave leaves the outputs in a fixed lane order (attention_bf16_lanes.h). Prefill
// tiles have their own GEMM-shaped kernel (attention_prefill_bf16_avx512.cpp).
// Measured against the F32 tile (kernel_bench, decode, d=128): it widened each K/V row to F32
// and spent ~160 cycles per key and KV head, mostly on loads and stores of the widened rows.
template <int64_t D>
struct Bf16Tile {
    static_assert(D % 32 == 0);
    static constexpr int64_t kPairVecs = D / 32;  // zmm of 32 BF16 per row

    static int64_t scratch_floats(int64_t num_rows) { return num_rows * D / 2 + num_rows * D + 2 * num_rows; }

    // Scores of `rows` query rows (BF16, [rows][D]) against `count` keys; softmax update; P·V.
    template <int R>
    static void attend_rows(const uint16_t* q, const uint16_t* keys, const uint16_t* values, int64_t stride,
                            int64_t count, float* o, float* m, float* l) {
        const __mmask16 valid = __mmask16((1u << count) - 1);
        // q stays in registers over the chunk's keys (gcc reloaded it for every key).
        __m512bh q_vecs[R][kPairVecs];
        for (int r = 0; r < R; ++r)
            for (int64_t c = 0; c < kPairVecs; ++c)
                q_vecs[r][c] = (__m512bh)_mm512_loadu_si512(q + r * D + 32 * c);
        __m512 dots[R][16];
        for (int64_t j = 0; j < 16; ++j) {
            __m512 acc[R];
            for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
            if (j < count) {
                for (int64_t c = 0; c < kPairVecs; ++c) {
                    __m512bh k = (__m512bh)_mm512_loadu_si512(keys + j * stride + 32 * c);
                    for (int r = 0; r < R; ++r) acc[r] = _mm512_dpbf16_ps(acc[r], k, q_vecs[r][c]);
                }
            }
            for (int r = 0; r < R; ++r) dots[r][kReducePerm[j]] = acc[r];
        }
        alignas(64) uint32_t p_pairs[R][8];
        float correction[R];
        for (int r = 0; r < R; ++r) {
            const __m512 p = online_softmax_update(reduce16(dots[r]), valid, m[r], l[r], correction[r]);
            __m256bh p_bf16 = _mm512_cvtneps_pbh(p);
            _mm256_store_si256(reinterpret_cast<__m256i*>(p_pairs[r]), (__m256i)p_bf16);
        }
        __m512 acc[R][2 * kPairVecs];
        for (int r = 0; r < R; ++r) {
            const __m512 scale = _mm512_set1_ps(correction[r]);
            for (int64_t c = 0; c < 2 * kPairVecs; ++c)
                acc[r][c] = _mm512_mul_ps(_mm512_loadu_ps(o + r * D + 16 * c), scale);
        }
        for (int64_t pair = 0; 2 * pair < count; ++pair) {
            const uint16_t* row_a = values + 2 * pair * stride;
            const bool has_b = 2 * pair + 1 < count;  // an odd last key pairs with zeros
            for (int64_t c = 0; c < kPairVecs; ++c) {
                __m512i va = _mm512_loadu_si512(row_a + 32 * c);
                __m512i vb = has_b ? _mm512_loadu_si512(row_a + stride + 32 * c) : _mm512_setzero_si512();
                __m512bh lo = (__m512bh)_mm512_unpacklo_epi16(va, vb);
                __m512bh hi = (__m512bh)_mm512_unpackhi_epi16(va, vb);
                for (int r = 0; r < R; ++r) {
                    __m512bh pp = (__m512bh)_mm512_set1_epi32(int32_t(p_pairs[r][pair]));
                    acc[r][2 * c] = _mm512_dpbf16_ps(acc[r][2 * c], lo, pp);
                    acc[r][2 * c + 1] = _mm512_dpbf16_ps(acc[r][2 * c + 1], hi, pp);
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t c = 0; c < 2 * kPairVecs; ++c) _mm512_storeu_ps(o + r * D + 16 * c, acc[r][c]);
    }

    // Rows are the query heads of KV heads [w.kv_head, +w.kv_head_count) for the sequence's one
    // new token; the chunk's K/V stay in L1 while every row visits them.
    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t num_rows = group * w.kv_head_count;
        const int64_t token = a.cu_seqlens_q[w.seq];
        const int64_t num_keys = min_i64(a.context_lens[w.seq], w.key_end);
        auto* q = reinterpret_cast<uint16_t*>(scratch);  // [num_rows][D] BF16, scaled
        float* o = scratch + num_rows * D / 2;           // [num_rows][D], lanes permuted
        float* m = o + num_rows * D;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        const __m512 scale = _mm512_set1_ps(a.scale);
        for (int64_t r = 0; r < num_rows; ++r) {
            const float* src = a.q + token * a.q_token_stride + (first_head + r) * D;
            for (int64_t d = 0; d < D; d += 16) {
                __m256bh packed = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_loadu_ps(src + d), scale));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + r * D + d), (__m256i)packed);
                _mm512_storeu_ps(o + r * D + d, _mm512_setzero_ps());
            }
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        const int64_t stride = cache.num_kv_heads * D;
        const auto* k_cache = static_cast<const uint16_t*>(cache.k);
        const auto* v_cache = static_cast<const uint16_t*>(cache.v);
        walk_decode_chunks(
            a, w, num_keys, true, [](int64_t, int64_t, int64_t) {},
            [&](int64_t r, auto rows, int64_t first, int64_t count) {
                attend_rows<decltype(rows)::value>(q + r * D, k_cache + first, v_cache + first, stride, count,
                                                   o + r * D, m + r, l + r);
            });
        if (w.partial) {  // split-K: the unnormalised state, merged by attention.cpp
            for (int64_t r = 0; r < num_rows; ++r) {
                store_bf16_pv_row(o + r * D, D, 1.0f, w.partial + r * D);
                store_partial_softmax_state(w.partial, D, r, m[r], l[r]);
            }
            return;
        }
        for (int64_t r = 0; r < num_rows; ++r) {
            store_bf16_pv_row(o + r * D, D, 1.0f / l[r], a.out + (token * a.num_heads + first_head + r) * D);
        }
    }
};

// Decode tiles on I8 / F8E4M3 caches (one scale per token and KV head). Each key and value row
// is converted to F32 in registers as it is read (2 instructions per 16 int8 values, 5 per 16
// fp8) and used by up to two query rows; the row scales are applied to the 16 scores of a chunk
// at once (keys) and folded into the softmax weights (values). The 16 unreduced dot products of
// a row go through a small stack buffer to reduce16, as in DecodeTile. I8 caches use it only
// without VNNI: with it, attention_decode_int8_avx512.cpp's integer tile (1.6x less CPU time).
template <int64_t D>
struct ScaledTile {
    static constexpr int64_t kVecs = D / 16;

    static int64_t scratch_floats(int64_t num_rows) { return 2 * num_rows * D + 2 * num_rows; }

    // Rows r < R (query heads, F32, pre-scaled) against `count` keys; online-softmax update; P·V.
    template <int R>
    static void attend_rows(const float* q, const uint8_t* keys, const uint8_t* values, int64_t stride,
                            int64_t count, bool fp8, const float* k_scales, const float* v_scales, float* o,
                            float* m, float* l) {
        const __mmask16 valid = __mmask16((1u << count) - 1);
        alignas(64) float dots[R][16][16];
        for (int64_t j = 0; j < 16; ++j) {
            __m512 acc[R];
            for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
            if (j < count) {
                for (int64_t c = 0; c < kVecs; ++c) {
                    const __m512 k = bytes16(keys + j * stride + 16 * c, fp8);
                    for (int r = 0; r < R; ++r)
                        acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(q + r * D + 16 * c), k, acc[r]);
                }
            }
            for (int r = 0; r < R; ++r) _mm512_store_ps(dots[r][kReducePerm[j]], acc[r]);
        }
        const __m512 key_scale = _mm512_maskz_loadu_ps(valid, k_scales);
        const __m512 value_scale = _mm512_maskz_loadu_ps(valid, v_scales);
        alignas(64) float probs[R][16];
        float correction[R];
        for (int r = 0; r < R; ++r) {
            __m512 rows[16];
            for (int j = 0; j < 16; ++j) rows[j] = _mm512_load_ps(dots[r][j]);
            const __m512 p = online_softmax_update(_mm512_mul_ps(reduce16(rows), key_scale), valid, m[r],
                                                   l[r], correction[r]);
            _mm512_store_ps(probs[r], _mm512_mul_ps(p, value_scale));
        }
        __m512 acc[R][kVecs];
        for (int r = 0; r < R; ++r) {
            const __m512 scale = _mm512_set1_ps(correction[r]);
            for (int64_t c = 0; c < kVecs; ++c)
                acc[r][c] = _mm512_mul_ps(_mm512_loadu_ps(o + r * D + 16 * c), scale);
        }
        for (int64_t j = 0; j < count; ++j) {
            for (int64_t c = 0; c < kVecs; ++c) {
                const __m512 v = bytes16(values + j * stride + 16 * c, fp8);
                for (int r = 0; r < R; ++r)
                    acc[r][c] = _mm512_fmadd_ps(_mm512_set1_ps(probs[r][j]), v, acc[r][c]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t c = 0; c < kVecs; ++c) _mm512_storeu_ps(o + r * D + 16 * c, acc[r][c]);
    }

    // Rows are the query heads of KV heads [w.kv_head, +w.kv_head_count) for the sequence's one
    // new token.
    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const bool fp8 = cache.dtype == DType::F8E4M3;
        const float byte_unit = fp8 ? 256.0f : 1.0f;  // bytes16 gives fp8 values / 256
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t num_rows = group * w.kv_head_count;
        const int64_t token = a.cu_seqlens_q[w.seq];
        const int64_t num_keys = min_i64(a.context_lens[w.seq], w.key_end);
        float* q = scratch;           // [num_rows][D], scaled
        float* o = q + num_rows * D;  // [num_rows][D]
        float* m = o + num_rows * D;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        init_f32_rows<D>(a, token, first_head, num_rows, num_rows, q, o, m, l);
        const int64_t stride = cache.num_kv_heads * D;
        const auto* k_cache = static_cast<const uint8_t*>(cache.k);
        const auto* v_cache = static_cast<const uint8_t*>(cache.v);
        alignas(64) float k_scales[16], v_scales[16];
        walk_decode_chunks(
            a, w, num_keys, D <= 128,
            [&](int64_t slot, int64_t count, int64_t head) {
                for (int64_t j = 0; j < count; ++j) {
                    k_scales[j] = cache.k_scale[(slot + j) * cache.num_kv_heads + head] * byte_unit;
                    v_scales[j] = cache.v_scale[(slot + j) * cache.num_kv_heads + head] * byte_unit;
                }
            },
            [&](int64_t r, auto rows, int64_t first, int64_t count) {
                attend_rows<decltype(rows)::value>(q + r * D, k_cache + first, v_cache + first, stride, count,
                                                   fp8, k_scales, v_scales, o + r * D, m + r, l + r);
            });
        finish_f32_rows<D>(a, w, token, first_head, num_rows, num_rows, o, m, l);
    }
};

// head_dim as a template parameter, chosen once per call.
template <typename Fn>
bool dispatch_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<16, 32, 64, 128, 256>(head_dim,
                                                   [&](auto d) { fn(Avx512Ops<decltype(d)::value>{}); });
}

}  // namespace

bool attention_avx512_supports(int64_t head_dim) {
    return dispatch_head_dim(head_dim, [](auto) {});
}

int64_t attention_decode_scratch_floats(int64_t head_dim, int64_t num_rows, int64_t kv_heads) {
    int64_t floats = 0;
    dispatch_head_dim(head_dim, [&](auto ops) {
        constexpr int64_t D = decltype(ops)::kVecs * 16;
        floats = max_i64(DecodeTile<D>::scratch_floats(num_rows, kv_heads),
                         ScaledTile<D>::scratch_floats(num_rows));
        floats = max_i64(floats, attention_decode_int8_vnni_scratch_floats(D, num_rows));
        if constexpr (D % 32 == 0) floats = max_i64(floats, Bf16Tile<D>::scratch_floats(kTileRows));
    });
    return floats;
}

void attention_tile_avx512(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    const bool bf16_dot = args.cache.dtype == DType::BF16 && args.bf16_dot;
    const bool decode = is_decode_tile(args, tile);
    dispatch_head_dim(args.cache.head_dim, [&](auto ops) {
        constexpr int64_t D = decltype(ops)::kVecs * 16;
        if (args.int8_dot && args.cache.dtype == DType::I8 && decode)
            return attention_decode_tile_int8_vnni(args, tile, scratch);
        if (kv_dtype_is_scaled(args.cache.dtype) && decode) return ScaledTile<D>::run(args, tile, scratch);
        if constexpr (D % 32 == 0) {
            if (bf16_dot && decode) return Bf16Tile<D>::run(args, tile, scratch);
            // Prefill on a BF16, int8 or fp8 cache with AVX512_BF16: the GEMM-shaped tile.
            if (args.bf16_dot && !decode && (bf16_dot || kv_dtype_is_scaled(args.cache.dtype)))
                return attention_prefill_tile_bf16(args, tile, scratch);
        }
        if (decode) return DecodeTile<D>::run(args, tile, scratch);
        attention_tile(ops, args, tile, scratch);
    });
}

}  // namespace lmrun::kernels
