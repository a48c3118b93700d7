// Decode tiles on an int8 KV cache with AVX512_VNNI integer dot products (vpdpbusd: 64 byte
// products summed into 16 int32 lanes per instruction), run where the ISA level has VNNI. The
// widening tile (ScaledTile in attention_avx512.cpp) converts every key and value byte to F32
// before its FMAs, 4 instructions per 16 bytes and query row, and is bound by them, not by the
// cache reads this tile exists to halve.
//
// Q·K: each query row (times the softmax scale) is quantized once per tile to int8 with its own
// scale, max|q| / 127, as the cache rows are. vpdpbusd multiplies unsigned by signed bytes: the
// key bytes are flipped to unsigned (k xor 0x80 = k + 128, one vpxor per 64 key bytes, shared by
// the rows) and 128 · Σ q, computed once per row, is taken off each dot product. Scores are then
// (dot - 128 Σq) · q_scale · k_scale[token], exact integers up to the two scales.
// P·V: the chunk's softmax weights, times each token's v_scale, are quantized to u8 (0..255)
// with one scale per row and chunk (their max / 255), and the values of 4 keys are interleaved
// byte by byte (vpunpck{l,h}bw, then {l,h}wd) so that one vpdpbusd adds p_j·v_j over 4 keys per
// lane; each chunk's int32 sums are added to the row's F32 output with the chunk's scale. The
// interleave works within 128-bit lanes, so outputs sit in a fixed permuted order (pv_dim)
// undone when the tile stores them.
// Both roundings are the ones of the cache itself (int8, 8 bits for the non-negative weights),
// as flash attention's fp8 path on GPUs quantizes q and p: attention_test.cpp holds the tile to
// the scalar reference within the bound they imply.
// GCC 12 reports _mm512_undefined_*() inside its own intrinsics as maybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>
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
    static constexpr int64_t kByteVecs = (D + 63) / 64;   // zmm of 64 bytes per cache row
    static constexpr int64_t kRowBytes = 64 * kByteVecs;  // a quantized q row, zero-padded
    static constexpr int64_t kOutVecs = 4 * kByteVecs;    // F32 zmm of a row's P·V output
    static constexpr int64_t kOutFloats = 16 * kOutVecs;

    // Bytes [64c, 64c + 64) of a cache row; beyond head_dim (16, 32) zeros, never read.
    static __m512i load_bytes(const int8_t* row, int64_t c) {
        if (D % 64 == 0 || c + 1 < kByteVecs) return _mm512_loadu_si512(row + 64 * c);
        return _mm512_maskz_loadu_epi8(__mmask64((uint64_t{1} << (D % 64)) - 1), row + 64 * c);
    }

    // The dimension that lane `lane` of output vector 4c + k holds: lane (L, t) = 4L + t of the
    // interleave of k (see attend_rows) carries dimension 64c + 16L + 4k + t.
    static int64_t pv_dim(int64_t vec, int64_t lane) {
        return 64 * (vec / 4) + 16 * (lane / 4) + 4 * (vec % 4) + lane % 4;
    }

    static int64_t scratch_floats(int64_t num_rows) { return num_rows * (kRowBytes / 4 + kOutFloats + 4); }

    // One query row times `scale` as int8 with its own scale: q8, q_scale, and 128 · Σ q8 (the
    // key flip's offset; at most 128 · 127 · 256, exact in F32).
    static void quantize_query(const float* src, float scale, int8_t* q8, float* q_scale, float* offset) {
        const __m512 factor = _mm512_set1_ps(scale);
        __m512 amax = _mm512_setzero_ps();
        for (int64_t d = 0; d < D; d += 16)
            amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_mul_ps(_mm512_loadu_ps(src + d), factor)));
        const float top = _mm512_reduce_max_ps(amax);
        const __m512 inverse = _mm512_set1_ps(top > 0.0f ? 127.0f / top : 0.0f);
        __m512i sum = _mm512_setzero_si512();
        for (int64_t d = 0; d < D; d += 16) {
            // Round to nearest even; |x| <= 127 so the saturating pack never clips.
            const __m512i codes =
                _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(src + d), factor), inverse));
            sum = _mm512_add_epi32(sum, codes);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(q8 + d), _mm512_cvtsepi32_epi8(codes));
        }
        for (int64_t d = D; d < kRowBytes; ++d) q8[d] = 0;
        *q_scale = top / 127.0f;
        *offset = 128.0f * float(_mm512_reduce_add_epi32(sum));
    }

    // Rows r < R of one KV head (q8 [R][kRowBytes]) against `count` <= 16 keys `stride` bytes
    // apart: online-softmax update of m, l and the permuted F32 outputs o [R][kOutFloats].
    template <int R>
    static void attend_rows(const int8_t* q8, const float* q_scale, const float* q_offset, const int8_t* keys,
                            const int8_t* values, int64_t stride, int64_t count, const float* k_scales,
                            const float* v_scales, float* o, float* m, float* l) {
        const __mmask16 valid = __mmask16((1u << count) - 1);
        __m512i q[R][kByteVecs];
        for (int r = 0; r < R; ++r)
            for (int64_t c = 0; c < kByteVecs; ++c) q[r][c] = _mm512_loadu_si512(q8 + r * kRowBytes + 64 * c);
        const __m512i flip = _mm512_set1_epi8(int8_t(0x80));
        alignas(64) int32_t dots[R][16][16];
        for (int64_t j = 0; j < 16; ++j) {
            __m512i acc[R];
            for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
            if (j < count) {
                for (int64_t c = 0; c < kByteVecs; ++c) {
                    const __m512i k = _mm512_xor_si512(load_bytes(keys + j * stride, c), flip);
                    for (int r = 0; r < R; ++r) acc[r] = _mm512_dpbusd_epi32(acc[r], k, q[r][c]);
                }
            }
            for (int r = 0; r < R; ++r) _mm512_store_si512(dots[r][kReducePerm[j]], acc[r]);
        }
        const __m512 key_scale = _mm512_maskz_loadu_ps(valid, k_scales);
        const __m512 value_scale = _mm512_maskz_loadu_ps(valid, v_scales);
        alignas(16) uint32_t p_bytes[R][4];  // dword g: the u8 weights of keys 4g..4g+3
        float p_unit[R], correction[R];
        for (int r = 0; r < R; ++r) {
            __m512i rows[16];
            for (int j = 0; j < 16; ++j) rows[j] = _mm512_load_si512(dots[r][j]);
            // |dot| <= 255 · 127 · 256 < 2^24: exact in F32, and so is the difference.
            const __m512 dot =
                _mm512_sub_ps(_mm512_cvtepi32_ps(reduce16_epi32(rows)), _mm512_set1_ps(q_offset[r]));
            const __m512 scores = _mm512_mul_ps(dot, _mm512_mul_ps(key_scale, _mm512_set1_ps(q_scale[r])));
            const __m512 p =
                _mm512_mul_ps(online_softmax_update(scores, valid, m[r], l[r], correction[r]), value_scale);
            const float top = _mm512_reduce_max_ps(p);  // p >= 0; 0 when every value row is zero
            p_unit[r] = top / 255.0f;
            const __m512 inverse = _mm512_set1_ps(top > 0.0f ? 255.0f / top : 0.0f);
            _mm_store_si128(reinterpret_cast<__m128i*>(p_bytes[r]),
                            _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(p, inverse))));
        }
        // Per 64 dimensions: the int32 sums of the chunk (at most 16 · 255 · 127), then added to
        // the outputs rescaled by the softmax correction.
        for (int64_t c = 0; c < kByteVecs; ++c) {
            __m512i acc[R][4];
            for (int r = 0; r < R; ++r)
                for (int k = 0; k < 4; ++k) acc[r][k] = _mm512_setzero_si512();
            for (int64_t g = 0; 4 * g < count; ++g) {
                const int8_t* row = values + 4 * g * stride;
                const int64_t rows_here = count - 4 * g;  // a short last group reads zeros (p is 0)
                const __m512i zero = _mm512_setzero_si512();
                const __m512i v0 = load_bytes(row, c);
                const __m512i v1 = rows_here > 1 ? load_bytes(row + stride, c) : zero;
                const __m512i v2 = rows_here > 2 ? load_bytes(row + 2 * stride, c) : zero;
                const __m512i v3 = rows_here > 3 ? load_bytes(row + 3 * stride, c) : zero;
                const __m512i lo01 = _mm512_unpacklo_epi8(v0, v1), hi01 = _mm512_unpackhi_epi8(v0, v1);
                const __m512i lo23 = _mm512_unpacklo_epi8(v2, v3), hi23 = _mm512_unpackhi_epi8(v2, v3);
                const __m512i x[4] = {_mm512_unpacklo_epi16(lo01, lo23), _mm512_unpackhi_epi16(lo01, lo23),
                                      _mm512_unpacklo_epi16(hi01, hi23), _mm512_unpackhi_epi16(hi01, hi23)};
                for (int r = 0; r < R; ++r) {
                    const __m512i weights = _mm512_set1_epi32(int32_t(p_bytes[r][g]));
                    for (int k = 0; k < 4; ++k) acc[r][k] = _mm512_dpbusd_epi32(acc[r][k], weights, x[k]);
                }
            }
            for (int r = 0; r < R; ++r) {
                const __m512 unit = _mm512_set1_ps(p_unit[r]), rescale = _mm512_set1_ps(correction[r]);
                for (int k = 0; k < 4; ++k) {
                    float* out = o + r * kOutFloats + 16 * (4 * c + k);
                    _mm512_storeu_ps(out, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][k]), unit,
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
        auto* q8 = reinterpret_cast<int8_t*>(scratch);  // [num_rows][kRowBytes]
        float* o = scratch + num_rows * kRowBytes / 4;  // [num_rows][kOutFloats], permuted
        float* q_scale = o + num_rows * kOutFloats;
        float* q_offset = q_scale + num_rows;
        float* m = q_offset + num_rows;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        for (int64_t r = 0; r < num_rows; ++r) {
            quantize_query(a.q + token * a.q_token_stride + (first_head + r) * D, a.scale, q8 + r * kRowBytes,
                           q_scale + r, q_offset + r);
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
            const int64_t offset = key0 % cache.block_size;
            const int64_t count = min_i64(min_i64(kKeyChunk, cache.block_size - offset), num_keys - key0);
            const int64_t slot = int64_t(blocks[key0 / cache.block_size]) * cache.block_size + offset;
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
                        attend_rows<2>(q8 + r * kRowBytes, q_scale + r, q_offset + r, k_cache + first,
                                       v_cache + first, stride, count, k_scales, v_scales, o + r * kOutFloats,
                                       m + r, l + r);
                        r += 2;
                    } else {
                        attend_rows<1>(q8 + r * kRowBytes, q_scale + r, q_offset + r, k_cache + first,
                                       v_cache + first, stride, count, k_scales, v_scales, o + r * kOutFloats,
                                       m + r, l + r);
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
