// Decode tiles on an int8 KV cache with AVX512_VNNI integer dot products (vpdpwssd: 32 products
// of int16 pairs summed into 16 int32 lanes per instruction), run where the ISA level has VNNI.
// The widening tile (ScaledTile in attention_avx512.cpp) converts every key and value byte to F32
// before its FMAs, 4 instructions per 16 bytes and query row, and is bound by them, not by the
// cache reads that an int8 cache halves.
//
// Q·K: each query row (times the softmax scale) is quantized once per tile to int16 with its own
// scale, max|q| / 32767; key bytes are sign-extended to int16 as they are loaded (vpmovsxbw, shared
// by the rows). Scores are dot · q_scale · k_scale[token], the dot an exact integer.
// P·V: the chunk's softmax weights, times each token's v_scale, are quantized to int16 (0..32767)
// with one scale per row and chunk (their max / 32767); the values of a key pair are interleaved
// word by word (vpunpck{l,h}wd) so that one vpdpwssd adds p_j·v_j + p_j+1·v_j+1 per lane, and
// each chunk's int32 sums are added to the row's F32 output with the chunk's scale. The interleave
// works within 128-bit lanes, so outputs sit in a fixed permuted order (pv_dim), undone when the
// tile stores them.
// Why 16 bits and not 8 (vpdpbusd, twice the products per instruction, keys flipped to unsigned
// and 128 · Σq taken off): measured first, int8 q and u8 p added 26-29% to the int8 cache's own
// mean error on ordinary rows (attention_test.cpp: Int8VnniDecodeTileAddsLittleToTheCacheRounding;
// 16 bits add 0.0%), and with outliers (a query element 30x the others, a key or value element of
// 40 or 60 among values of 1: a value outlier sets the chunk's weight step) outputs were off by
// up to 6.4 where 16 bits stay within 0.021 of the reference. The 8-bit tile was ~10% faster
// (kernel_bench, batch 8, 4096 keys, 2 threads, Sapphire Rapids VM: 3.04 against 3.36 ms, the
// widening tile 9.0 ms; medians of 5 alternating runs beside a neighbour's load), as both are
// close to the KV read bandwidth there.

#include "kernels/avx512_intrinsics.h"

#include <math.h>

#include <cstdint>
#include <utility>

#include "kernels/attention_reduce_avx512.h"
#include "kernels/attention_tile.h"
#include "kernels/dispatch_constant.h"
#include "kernels/isa_local_math.h"
#include "kernels/online_softmax_avx512.h"

namespace lmrun::kernels {
namespace {

template <int64_t D>
struct Int8VnniTile {
    static_assert(D % 16 == 0);
    static constexpr int64_t kWordVecs = (D + 31) / 32;   // zmm of 32 int16 per row
    static constexpr int64_t kRowWords = 32 * kWordVecs;  // a quantized q row, zero-padded
    static constexpr int64_t kOutVecs = 2 * kWordVecs;    // F32 zmm of a row's P·V output
    static constexpr int64_t kOutFloats = 16 * kOutVecs;
    static constexpr float kCodeMax = 32767.0f;  // q and p codes: int16, 15 bits of magnitude

    // Bytes [32c, 32c + 32) of a cache row as int16; beyond head_dim (16) zeros, never read.
    static __m512i load_words(const int8_t* row, int64_t c) {
        if (D % 32 == 0 || c + 1 < kWordVecs)
            return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * c)));
        return _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(__mmask32((1u << (D % 32)) - 1), row + 32 * c));
    }

    // The dimension that lane `lane` of output vector 2c + h holds: vpunpck{l,h}wd pair words
    // within 128-bit lanes, so lane (L, t) = 4L + t carries dimension 32c + 8L + 4h + t.
    static int64_t pv_dim(int64_t vec, int64_t lane) {
        return 32 * (vec / 2) + 8 * (lane / 4) + 4 * (vec % 2) + lane % 4;
    }

    static int64_t scratch_floats(int64_t num_rows) { return num_rows * (kRowWords / 2 + kOutFloats + 3); }

    // One query row times `scale` as int16 codes with its own scale.
    static void quantize_query(const float* src, float scale, int16_t* q16, float* q_scale) {
        const __m512 factor = _mm512_set1_ps(scale);
        __m512 amax = _mm512_setzero_ps();
        for (int64_t d = 0; d < D; d += 16)
            amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_mul_ps(_mm512_loadu_ps(src + d), factor)));
        const float top = _mm512_reduce_max_ps(amax);
        const __m512 inverse = _mm512_set1_ps(top > 0.0f ? kCodeMax / top : 0.0f);
        for (int64_t d = 0; d < D; d += 16) {
            // Round to nearest even; |x| <= 32767 so the saturating pack never clips.
            const __m512i codes =
                _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(src + d), factor), inverse));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q16 + d), _mm512_cvtsepi32_epi16(codes));
        }
        for (int64_t d = D; d < kRowWords; ++d) q16[d] = 0;
        *q_scale = top / kCodeMax;
    }

    // Rows r < R of one KV head (q16 [R][kRowWords]) against `count` <= 16 keys `stride` bytes
    // apart: online-softmax update of m, l and the permuted F32 outputs o [R][kOutFloats].
    template <int R>
    static void attend_rows(const int16_t* q16, const float* q_scale, const int8_t* keys,
                            const int8_t* values, int64_t stride, int64_t count, const float* k_scales,
                            const float* v_scales, ChunkPrefetch& chunk_prefetch, float* o, float* m,
                            float* l) {
        ChunkPrefetch prefetch = chunk_prefetch;  // a local copy: its fields stay in registers
        const __mmask16 valid = __mmask16((1u << count) - 1);
        __m512i q[R][kWordVecs];
        for (int r = 0; r < R; ++r)
            for (int64_t c = 0; c < kWordVecs; ++c)
                q[r][c] = _mm512_loadu_si512(q16 + r * kRowWords + 32 * c);
        alignas(64) int32_t dots[R][16][16];
        for (int64_t j = 0; j < 16; ++j) {
            prefetch.step();
            __m512i acc[R];
            for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
            if (j < count) {
                for (int64_t c = 0; c < kWordVecs; ++c) {
                    const __m512i k = load_words(keys + j * stride, c);
                    for (int r = 0; r < R; ++r) acc[r] = _mm512_dpwssd_epi32(acc[r], k, q[r][c]);
                }
            }
            for (int r = 0; r < R; ++r) _mm512_store_si512(dots[r][kReducePerm[j]], acc[r]);
        }
        chunk_prefetch = prefetch;
        const __m512 key_scale = _mm512_maskz_loadu_ps(valid, k_scales);
        const __m512 value_scale = _mm512_maskz_loadu_ps(valid, v_scales);
        alignas(32) uint32_t p_pairs[R][8];  // dword g: the int16 weights of keys 2g and 2g + 1
        float p_unit[R], correction[R];
        for (int r = 0; r < R; ++r) {
            __m512i rows[16];
            for (int j = 0; j < 16; ++j) rows[j] = _mm512_load_si512(dots[r][j]);
            // |dot| <= 32767 · 127 · 256 < 2^31 (F32 keeps 24 of its bits).
            const __m512 dot = _mm512_cvtepi32_ps(reduce16_epi32(rows));
            const __m512 scores = _mm512_mul_ps(dot, _mm512_mul_ps(key_scale, _mm512_set1_ps(q_scale[r])));
            const __m512 p =
                _mm512_mul_ps(online_softmax_update(scores, valid, m[r], l[r], correction[r]), value_scale);
            const float top = _mm512_reduce_max_ps(p);  // p >= 0; 0 when every value row is zero
            p_unit[r] = top / kCodeMax;
            const __m512 inverse = _mm512_set1_ps(top > 0.0f ? kCodeMax / top : 0.0f);
            _mm256_store_si256(reinterpret_cast<__m256i*>(p_pairs[r]),
                               _mm512_cvtusepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(p, inverse))));
        }
        // Per 32 dimensions: the int32 sums of the chunk (at most 16 · 32767 · 127), then added
        // to the outputs rescaled by the softmax correction.
        for (int64_t c = 0; c < kWordVecs; ++c) {
            __m512i acc[R][2];
            for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
            for (int64_t g = 0; 2 * g < count; ++g) {
                const int8_t* row = values + 2 * g * stride;
                const __m512i va = load_words(row, c);
                // An odd last key pairs with zeros (its partner's weight is 0 too).
                const __m512i vb = 2 * g + 1 < count ? load_words(row + stride, c) : _mm512_setzero_si512();
                const __m512i lo = _mm512_unpacklo_epi16(va, vb), hi = _mm512_unpackhi_epi16(va, vb);
                for (int r = 0; r < R; ++r) {
                    const __m512i weights = _mm512_set1_epi32(int32_t(p_pairs[r][g]));
                    acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], lo, weights);
                    acc[r][1] = _mm512_dpwssd_epi32(acc[r][1], hi, weights);
                }
            }
            for (int r = 0; r < R; ++r) {
                const __m512 unit = _mm512_set1_ps(p_unit[r]), rescale = _mm512_set1_ps(correction[r]);
                for (int h = 0; h < 2; ++h) {
                    float* out = o + r * kOutFloats + 16 * (2 * c + h);
                    _mm512_storeu_ps(out, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][h]), unit,
                                                          _mm512_mul_ps(_mm512_loadu_ps(out), rescale)));
                }
            }
        }
    }

    // Rows are the query heads of KV heads [w.kv_head, +w.kv_head_count) for the sequence's one
    // new token.
    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t num_rows = group * w.kv_head_count;
        const int64_t token = a.cu_seqlens_q[w.seq];
        const int64_t num_keys = min_i64(a.context_lens[w.seq], w.key_end);
        auto* q16 = reinterpret_cast<int16_t*>(scratch);  // [num_rows][kRowWords]
        float* o = scratch + num_rows * kRowWords / 2;    // [num_rows][kOutFloats], permuted
        float* q_scale = o + num_rows * kOutFloats;
        float* m = q_scale + num_rows;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        for (int64_t r = 0; r < num_rows; ++r) {
            quantize_query(a.q + token * a.q_token_stride + (first_head + r) * D, a.scale,
                           q16 + r * kRowWords, q_scale + r);
            for (int64_t i = 0; i < kOutFloats; ++i) o[r * kOutFloats + i] = 0.0f;
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
        const int64_t stride = cache.num_kv_heads * D;
        const auto* k_cache = static_cast<const int8_t*>(cache.k);
        const auto* v_cache = static_cast<const int8_t*>(cache.v);
        alignas(64) float k_scales[16], v_scales[16];
        for (int64_t key0 = w.key_begin; key0 < num_keys;) {
            const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
            // The next chunk's prefetch, a few lines per key step of every attend_rows call over
            // this chunk: (group + 1) / 2 calls per KV head, kKeyChunk steps each.
            ChunkPrefetch prefetch(cache, next_key_chunk(cache, blocks, key0, count, num_keys), w.kv_head,
                                   w.kv_head_count, w.kv_head_count * ((group + 1) / 2) * kKeyChunk,
                                   a.kv_prefetch_l2);
            // Heads in address order: a token's KV heads are adjacent in the cache.
            for (int64_t h = 0; h < w.kv_head_count; ++h) {
                const int64_t head = w.kv_head + h;
                for (int64_t j = 0; j < count; ++j) {
                    k_scales[j] = cache.k_scale[(slot + j) * cache.num_kv_heads + head];
                    v_scales[j] = cache.v_scale[(slot + j) * cache.num_kv_heads + head];
                }
                const int64_t first = (slot * cache.num_kv_heads + head) * D;
                for (int64_t r = h * group; r < (h + 1) * group;) {
                    if ((h + 1) * group - r >= 2) {
                        attend_rows<2>(q16 + r * kRowWords, q_scale + r, k_cache + first, v_cache + first,
                                       stride, count, k_scales, v_scales, prefetch, o + r * kOutFloats, m + r,
                                       l + r);
                        r += 2;
                    } else {
                        attend_rows<1>(q16 + r * kRowWords, q_scale + r, k_cache + first, v_cache + first,
                                       stride, count, k_scales, v_scales, prefetch, o + r * kOutFloats, m + r,
                                       l + r);
                        r += 1;
                    }
                }
            }
            key0 += count;
        }
        for (int64_t r = 0; r < num_rows; ++r) {
            // Split-K: the unnormalised state, merged by attention.cpp; else o / l.
            float* dst = w.partial ? w.partial + r * D : a.out + (token * a.num_heads + first_head + r) * D;
            const float factor = w.partial ? 1.0f : 1.0f / l[r];
            for (int64_t vec = 0; vec < kOutVecs; ++vec)
                for (int64_t lane = 0; lane < 16; ++lane) {
                    const int64_t d = pv_dim(vec, lane);
                    if (d < D) dst[d] = o[r * kOutFloats + 16 * vec + lane] * factor;
                }
            if (w.partial) store_partial_softmax_state(w.partial, D, r, m[r], l[r]);
        }
    }
};

template <typename Fn>
bool dispatch_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<16, 32, 64, 128, 256>(head_dim, std::forward<Fn>(fn));
}

}  // namespace

int64_t attention_decode_int8_vnni_scratch_floats(int64_t head_dim, int64_t num_rows) {
    int64_t floats = 0;
    dispatch_head_dim(head_dim,
                      [&](auto d) { floats = Int8VnniTile<decltype(d)::value>::scratch_floats(num_rows); });
    return floats;
}

void attention_decode_tile_int8_vnni(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    dispatch_head_dim(args.cache.head_dim,
                      [&](auto d) { Int8VnniTile<decltype(d)::value>::run(args, tile, scratch); });
}

}  // namespace lmrun::kernels
