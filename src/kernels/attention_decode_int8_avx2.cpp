// The AVX2 decode tile on an int8 KV cache (one query token; the GQA group's heads as rows), with
// integer dot products: vpmaddwd multiplies 16 int16 pairs and sums each pair into 8 int32 lanes,
// the AVX2 form of the VNNI tile's vpdpwssd (attention_decode_int8_avx512.cpp, which says why
// 16-bit codes and not 8: they add nothing measurable to the cache's own rounding).
//
// Q·K: each query row (times the softmax scale) is quantized once per tile to int16 with its own
// scale, max|q| / 32767; key bytes are sign-extended to int16 as they are loaded (vpmovsxbw,
// shared by the rows). A score is dot · q_scale · k_scale[token], the dot an exact integer.
// P·V: the chunk's softmax weights times each token's v_scale are quantized to int16 (0..32767)
// with one scale per row and chunk; the values of a key pair are interleaved word by word
// (vpunpck{l,h}wd) so that one vpmaddwd gives p_j·v_j + p_j+1·v_j+1 per lane. The interleave
// works within 128-bit lanes: a 16-dim group's outputs sit as dims 0-3 and 8-11, then 4-7 and
// 12-15 (unpacked_order_avx2.h), put back in head order once at the end of the tile.
//
// Per 16 key bytes and query row this is a vpmaddwd and a vpaddd, after one shared vpmovsxbw.
// The tile it replaced for int8 caches (the BF16 tile, attention_decode_bf16_avx2.cpp, made a
// template over the element type) converted every byte to F32 first: a vpmovsxbw, two unpacks
// and two vcvtdq2ps per 16 bytes, then two FMAs per row. kernel_bench on Zen 3 (EPYC, family 25
// model 1), 2 threads, KV from DRAM, 3 alternating rounds: decode batch 8 at 4096 tokens
// 5.16 / 6.48 / 6.10 -> 5.12 / 5.71 / 5.12 ms, batch 64 at 128 tokens 1.96 / 1.67 / 1.73 ->
// 1.60 / 1.54 / 1.61 ms, batch 8 at 128 tokens 0.226 / 0.243 / 0.238 -> 0.192 / 0.233 / 0.192
// ms. Both ran well below the bytes' limit (int8 12-13 GB/s of KV, a BF16 cache 19-22 GB/s
// in the same rounds). What held the int8 tile back was the next chunk's prefetch, issued as a
// burst at each KV head: it now goes out a line pair or so at each key group and P·V pass
// (walk_decode_chunks_spread, as the VNNI tile does), which took 1.4-2.1x off every decode
// case of kernel_bench on Zen 3 (KV from DRAM, 3 alternating rounds; batch 8 at 4096 tokens
// 7.8-10.2 -> 4.9-6.3 ms). Into L1 or L2 made no difference there; a step per 16 dims and
// value pair (the BF16 tile's finer spread) was slower (0.63-0.97x), and so were two or three
// chunks ahead instead of one (0.9-0.95x, `lmrun bench`'s 256-token blocks).
// The outputs go back to head order by lane permutes (unpacked_order_avx2.h) and the chunk's
// scales are read by pointer; `lmrun bench --profile`, Zen 3, int8 weights and KV, decode batch
// 8 at 2048 tokens, paged attention per step: 75-83 ms before (4 runs), 66-68 ms after (2).
// P·V loads both rows' halves of a key pair before any vpmaddwd, though with R = 2 that leaves
// GCC one accumulator short of registers (a store and reload per pair). Taking one 16-dim half
// at a time removes the spill, and with the two changes above it measured 0.92x the time per
// decode case in kernel_bench (KV in cache, 4 rounds), but in the model runs above 73-90 ms
// (4 runs): the value loads were no longer in flight together.
// Since then the two-row dot step and P·V pair step are inline asm (dot_step_2x4, pv_step_2x4),
// which keeps all 8 P·V sums in registers with a pair's four value loads ahead of its
// vpmaddwd: GCC 12 gave the dot loop a register copy per add and P·V that stored sum. Zen 3, 2
// threads, old and new tile in one process alternating (30 pairs, medians, results
// bit-identical): batch 8 at 4096 tokens (KV from DRAM) 1.06x, batch 64 at 128 1.10x, KV in L2/L3
// 1.06-1.14x. Larger chunks (32 or 64 keys per softmax step, amortising its horizontal reductions
// and quantizing) measured 1.15-1.27x with the KV in cache but 0.9-1.05x from DRAM (a bigger
// unprefetched first chunk; a KV head's value rows, a token row apart, collide in L1's sets past
// 16 keys): kept 16.
#include <immintrin.h>

#include "kernels/attention_softmax_avx2.h"
#include "kernels/attention_tile.h"
#include "kernels/attention_tile_driver.h"
#include "kernels/dispatch_constant.h"
#include "kernels/isa_local_math.h"
#include "kernels/unpacked_order_avx2.h"

namespace lmrun::kernels {
namespace {

inline constexpr float kCodeMax = 32767.0f;  // q and p codes: int16, 15 bits of magnitude

// 16 cache bytes as int16.
inline __m256i load_words(const int8_t* src) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
}

// 16 F32 (lo: elements 0-7, hi: 8-15) times `inverse`, rounded to nearest even, as 16 int16 in
// element order. |x · inverse| <= 32767, so the saturating pack never clips.
inline __m256i to_codes(__m256 lo, __m256 hi, __m256 inverse) {
    const __m256i packed = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(lo, inverse)),
                                              _mm256_cvtps_epi32(_mm256_mul_ps(hi, inverse)));
    return _mm256_permute4x64_epi64(packed, 0xD8);  // packs works per 128-bit lane
}

// Lane i of the result: the sum of the 8 lanes of v[i].
inline __m256i reduce8_epi32(const __m256i* v) {
    const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                            _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

// One 16-dimension step of two query rows' dot products (q0, q1: their 16 int16 codes) with four
// keys (k0-k3: their 16 bytes): per key a vpmovsxbw shared by the rows, then per row vpmaddwd
// and vpaddd into acc[k] (row 0) or acc[4 + k] (row 1). One asm statement because GCC 12 compiles
// the same intrinsics with a register copy after every add (the sum formed in the product's
// register, then moved back): 8 of the loop's 32 instructions.
inline void dot_step_2x4(const int8_t* k0, const int8_t* k1, const int8_t* k2, const int8_t* k3,
                         const int16_t* q0, const int16_t* q1, __m256i (&acc)[8]) {
    __m256i a, b, w, t;
    // clang-format off
#define LMRUN_DOT_KEY(K, S0, S1)            \
    "vpmovsxbw " K ", %[w]\n\t"             \
    "vpmaddwd %[a], %[w], %[t]\n\t"         \
    "vpmaddwd %[b], %[w], %[w]\n\t"         \
    "vpaddd %[t], " S0 ", " S0 "\n\t"       \
    "vpaddd %[w], " S1 ", " S1 "\n\t"
    __asm__("vmovdqu %[q0], %[a]\n\t"
            "vmovdqu %[q1], %[b]\n\t"
            LMRUN_DOT_KEY("%[k0]", "%[s0]", "%[s4]")
            LMRUN_DOT_KEY("%[k1]", "%[s1]", "%[s5]")
            LMRUN_DOT_KEY("%[k2]", "%[s2]", "%[s6]")
            LMRUN_DOT_KEY("%[k3]", "%[s3]", "%[s7]")
            : [s0] "+x"(acc[0]), [s1] "+x"(acc[1]), [s2] "+x"(acc[2]), [s3] "+x"(acc[3]),
              [s4] "+x"(acc[4]), [s5] "+x"(acc[5]), [s6] "+x"(acc[6]), [s7] "+x"(acc[7]),
              [a] "=&x"(a), [b] "=&x"(b), [w] "=&x"(w), [t] "=&x"(t)
            : [k0] "m"(*reinterpret_cast<const __m128i*>(k0)), [k1] "m"(*reinterpret_cast<const __m128i*>(k1)),
              [k2] "m"(*reinterpret_cast<const __m128i*>(k2)), [k3] "m"(*reinterpret_cast<const __m128i*>(k3)),
              [q0] "m"(*reinterpret_cast<const __m256i*>(q0)), [q1] "m"(*reinterpret_cast<const __m256i*>(q1)));
#undef LMRUN_DOT_KEY
    // clang-format on
}

// One key pair's P·V for two rows and 32 outputs: the pair's value rows (a: `row`, b: `row` +
// stride) as int16, interleaved word by word (vpunpck{l,h}wd), then per row its two codes
// (broadcast from w0, w1) times them into acc0 and acc1 (vpmaddwd, vpaddd). As asm for the same
// reason as dot_step_2x4: from the intrinsics GCC 12 kept one of the 8 sums on the stack (a load
// and a store per pair) and copied four others.
inline void pv_step_2x4(const int8_t* row, int64_t stride, const uint32_t* w0, const uint32_t* w1,
                        __m256i (&acc0)[4], __m256i (&acc1)[4]) {
    __m256i a, b, v0, v1, v2, v3;
    const int8_t* row_b = row + stride;
    // clang-format off
#define LMRUN_PV_ROW(W, S0, S1, S2, S3)           \
    "vpbroadcastd " W ", %[a]\n\t"               \
    "vpmaddwd %[a], %[v0], %[b]\n\t"             \
    "vpaddd %[b], " S0 ", " S0 "\n\t"            \
    "vpmaddwd %[a], %[v1], %[b]\n\t"             \
    "vpaddd %[b], " S1 ", " S1 "\n\t"            \
    "vpmaddwd %[a], %[v2], %[b]\n\t"             \
    "vpaddd %[b], " S2 ", " S2 "\n\t"            \
    "vpmaddwd %[a], %[v3], %[b]\n\t"             \
    "vpaddd %[b], " S3 ", " S3 "\n\t"
    __asm__("vpmovsxbw %[a0], %[a]\n\t"
            "vpmovsxbw %[b0], %[b]\n\t"
            "vpunpcklwd %[b], %[a], %[v0]\n\t"
            "vpunpckhwd %[b], %[a], %[v1]\n\t"
            "vpmovsxbw %[a1], %[a]\n\t"
            "vpmovsxbw %[b1], %[b]\n\t"
            "vpunpcklwd %[b], %[a], %[v2]\n\t"
            "vpunpckhwd %[b], %[a], %[v3]\n\t"
            LMRUN_PV_ROW("%[w0]", "%[s00]", "%[s01]", "%[s02]", "%[s03]")
            LMRUN_PV_ROW("%[w1]", "%[s10]", "%[s11]", "%[s12]", "%[s13]")
            : [s00] "+x"(acc0[0]), [s01] "+x"(acc0[1]), [s02] "+x"(acc0[2]), [s03] "+x"(acc0[3]),
              [s10] "+x"(acc1[0]), [s11] "+x"(acc1[1]), [s12] "+x"(acc1[2]), [s13] "+x"(acc1[3]),
              [a] "=&x"(a), [b] "=&x"(b), [v0] "=&x"(v0), [v1] "=&x"(v1), [v2] "=&x"(v2), [v3] "=&x"(v3)
            : [a0] "m"(*reinterpret_cast<const __m128i*>(row)),
              [a1] "m"(*reinterpret_cast<const __m128i*>(row + 16)),
              [b0] "m"(*reinterpret_cast<const __m128i*>(row_b)),
              [b1] "m"(*reinterpret_cast<const __m128i*>(row_b + 16)), [w0] "m"(*w0), [w1] "m"(*w1));
#undef LMRUN_PV_ROW
    // clang-format on
}

template <int64_t D>
struct Int8MaddDecodeAvx2 {
    static_assert(D % 32 == 0);

    // One query row times `scale` as int16 codes (head order) with its own scale.
    static void quantize_query(const float* src, float scale, int16_t* q16, float* q_scale) {
        const __m256 factor = _mm256_set1_ps(scale);
        const __m256 sign = _mm256_set1_ps(-0.0f);
        __m256 amax = _mm256_setzero_ps();
        for (int64_t d = 0; d < D; d += 8)
            amax =
                _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_mul_ps(_mm256_loadu_ps(src + d), factor)));
        const float top = horizontal_max(amax);
        const __m256 inverse = _mm256_set1_ps(top > 0.0f ? kCodeMax / top * scale : 0.0f);
        for (int64_t d = 0; d < D; d += 16)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q16 + d),
                                to_codes(_mm256_loadu_ps(src + d), _mm256_loadu_ps(src + d + 8), inverse));
        *q_scale = top / kCodeMax;
    }

    // The prefetch steps attend_rows<R> takes: one per key group of dot_chunk, one per P·V pass.
    static constexpr int64_t steps_per_call(int R) { return kKeyChunk / (8 / R) + D / 32; }

    // dots[r][j] = q_r · key_j (integers) for R rows and the chunk's 16 keys, 8 at a time (8 / R
    // keys x R rows, unreduced in 8 accumulators), a prefetch step per 8. Keys at or past
    // `count` repeat the chunk's last key: in range, and masked by the softmax.
    template <int R>
    static void dot_chunk(const int16_t* q16, const int8_t* keys, int64_t stride, int64_t count,
                          int32_t (*dots)[kKeyChunk], ChunkPrefetch& prefetch) {
        constexpr int kKeys = 8 / R;
        for (int64_t j0 = 0; j0 < kKeyChunk; j0 += kKeys) {
            const int8_t* key[kKeys];
#pragma GCC unroll 8
            for (int k = 0; k < kKeys; ++k) key[k] = keys + min_i64(j0 + k, count - 1) * stride;
            __m256i acc[8];  // acc[r * kKeys + k]
#pragma GCC unroll 8
            for (__m256i& a : acc) a = _mm256_setzero_si256();
            prefetch.step();
            if constexpr (R == 2) {
                for (int64_t d = 0; d < D; d += 16)
                    dot_step_2x4(key[0] + d, key[1] + d, key[2] + d, key[3] + d, q16 + d, q16 + D + d, acc);
            } else {
                // Not unrolled: GCC 12, unrolling the D / 16 steps, keeps q on the stack and stores
                // every product there before its add.
#pragma GCC unroll 1
                for (int64_t d = 0; d < D; d += 16) {
                    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q16 + d));
#pragma GCC unroll 8
                    for (int k = 0; k < kKeys; ++k)
                        acc[k] = _mm256_add_epi32(acc[k], _mm256_madd_epi16(load_words(key[k] + d), q));
                }
            }
            // Lane r * kKeys + k of the sums is dots[r][j0 + k]: a store of kKeys lanes per row (GCC
            // made the element-wise copy a chain of lane extracts and inserts).
            const __m256i sums = reduce8_epi32(acc);
            if constexpr (R == 1) {
                _mm256_store_si256(reinterpret_cast<__m256i*>(dots[0] + j0), sums);
            } else {
                _mm_store_si128(reinterpret_cast<__m128i*>(dots[0] + j0), _mm256_castsi256_si128(sums));
                _mm_store_si128(reinterpret_cast<__m128i*>(dots[1] + j0), _mm256_extracti128_si256(sums, 1));
            }
        }
    }

    // One key pair's P·V for R rows and 32 outputs: `row` is the pair's first value row (the
    // second one is `stride` further, or zeros when Pair is false: an odd last key), `weights` the
    // pair's codes in row 0 (row r's are r · kKeyChunk / 2 dwords further).
    template <int R, bool Pair>
    static void pv_pair(const int8_t* row, int64_t stride, const uint32_t* weights, __m256i (&acc)[R][4]) {
        if constexpr (R == 2 && Pair) {
            pv_step_2x4(row, stride, weights, weights + kKeyChunk / 2, acc[0], acc[1]);
            return;
        }
        __m256i v[4];
#pragma GCC unroll 2
        for (int64_t half = 0; half < 2; ++half) {
            const __m256i a = load_words(row + 16 * half);
            const __m256i b = Pair ? load_words(row + stride + 16 * half) : _mm256_setzero_si256();
            v[2 * half] = _mm256_unpacklo_epi16(a, b);
            v[2 * half + 1] = _mm256_unpackhi_epi16(a, b);
        }
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r) {
            const __m256i w = _mm256_set1_epi32(int32_t(weights[r * kKeyChunk / 2]));
#pragma GCC unroll 4
            for (int64_t c = 0; c < 4; ++c)
                acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(v[c], w));
        }
    }

    // Rows r < R against the chunk's first `count` keys: the online-softmax update of their m,
    // l and o (unpacked order), P·V 32 outputs per pass. k_scales, v_scales: the chunk's 16
    // row scales (0 past count). Issues steps_per_call(R) steps of the next chunk's prefetch.
    template <int R>
    static void attend_rows(const int16_t* q16, const float* q_scale, const int8_t* keys,
                            const int8_t* values, int64_t stride, int64_t count, const float* k_scales,
                            const float* v_scales, ChunkPrefetch& chunk_prefetch, float* o, float* m,
                            float* l) {
        ChunkPrefetch prefetch = chunk_prefetch;  // a local copy: its fields stay in registers
        alignas(32) int32_t dots[R][kKeyChunk];
        dot_chunk<R>(q16, keys, stride, count, dots, prefetch);
        alignas(32) uint32_t p_pairs[R][kKeyChunk / 2];  // dword g: the codes of keys 2g and 2g + 1
        float p_unit[R];
        __m256 rescale[R];
        const __m256 k_lo = _mm256_load_ps(k_scales), k_hi = _mm256_load_ps(k_scales + 8);
        for (int r = 0; r < R; ++r) {
            // |dot| <= 32767 · 128 · 256 < 2^31 (F32 keeps 24 of its bits).
            const __m256 unit = _mm256_set1_ps(q_scale[r]);
            const __m256 s_lo = _mm256_mul_ps(
                _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dots[r]))),
                _mm256_mul_ps(k_lo, unit));
            const __m256 s_hi = _mm256_mul_ps(
                _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dots[r] + 8))),
                _mm256_mul_ps(k_hi, unit));
            __m256 p_lo, p_hi;
            rescale[r] = _mm256_set1_ps(online_softmax16(s_lo, s_hi, count, m[r], l[r], p_lo, p_hi));
            // l sums the weights; P·V takes them times the value scales.
            p_lo = _mm256_mul_ps(p_lo, _mm256_load_ps(v_scales));
            p_hi = _mm256_mul_ps(p_hi, _mm256_load_ps(v_scales + 8));
            const float top = horizontal_max(_mm256_max_ps(p_lo, p_hi));  // 0 when every value row is 0
            p_unit[r] = top / kCodeMax;
            const __m256 inverse = _mm256_set1_ps(top > 0.0f ? kCodeMax / top : 0.0f);
            _mm256_store_si256(reinterpret_cast<__m256i*>(p_pairs[r]), to_codes(p_lo, p_hi, inverse));
        }
        // Per 32 dimensions the chunk's int32 sums (at most 16 · 32767 · 128), then added to the
        // outputs rescaled by the softmax correction.
        for (int64_t d0 = 0; d0 < D; d0 += 32) {
            __m256i acc[R][4];
#pragma GCC unroll 2
            for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
                for (int64_t c = 0; c < 4; ++c) acc[r][c] = _mm256_setzero_si256();
            prefetch.step();
            const int64_t full_pairs = count / 2;
            for (int64_t g = 0; g < full_pairs; ++g)
                pv_pair<R, true>(values + 2 * g * stride + d0, stride, p_pairs[0] + g, acc);
            // An odd last key pairs with zeros (its partner's weight is 0 too).
            if (count % 2 != 0)
                pv_pair<R, false>(values + 2 * full_pairs * stride + d0, stride, p_pairs[0] + full_pairs,
                                  acc);
#pragma GCC unroll 2
            for (int r = 0; r < R; ++r) {
                const __m256 unit = _mm256_set1_ps(p_unit[r]);
#pragma GCC unroll 4
                for (int64_t c = 0; c < 4; ++c) {
                    float* out = o + r * D + d0 + 8 * c;
                    _mm256_storeu_ps(out, _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][c]), unit,
                                                          _mm256_mul_ps(_mm256_loadu_ps(out), rescale[r])));
                }
            }
        }
        chunk_prefetch = prefetch;
    }

    static int64_t scratch_floats(int64_t num_rows) { return num_rows * (D + D / 2 + 3); }

    // Rows are the query heads of KV heads [w.kv_head, +w.kv_head_count) for the sequence's one
    // new token; a chunk's rows of one KV head stay in L1 while that head's rows read them.
    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t num_rows = group * w.kv_head_count;
        const int64_t token = a.cu_seqlens_q[w.seq];
        const int64_t num_keys = min_i64(a.context_lens[w.seq], w.key_end);
        float* o = scratch;                                        // [num_rows][D], unpacked order
        auto* q16 = reinterpret_cast<int16_t*>(o + num_rows * D);  // [num_rows][D]
        float* q_scale = o + num_rows * D + num_rows * D / 2;
        float* m = q_scale + num_rows;
        float* l = m + num_rows;
        const int64_t first_head = w.kv_head * group;
        for (int64_t r = 0; r < num_rows; ++r) {
            quantize_query(a.q + token * a.q_token_stride + (first_head + r) * D, a.scale, q16 + r * D,
                           q_scale + r);
            for (int64_t d = 0; d < D; ++d) o[r * D + d] = 0.0f;
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        const int64_t stride = cache.num_kv_heads * D;
        const auto* k_cache = static_cast<const int8_t*>(cache.k);
        const auto* v_cache = static_cast<const int8_t*>(cache.v);
        alignas(32) float k_scales[kKeyChunk], v_scales[kKeyChunk];
        walk_decode_chunks_spread(
            a, w, num_keys, [](int rows) { return steps_per_call(rows); },
            [&](int64_t slot, int64_t count, int64_t head) {
                const int64_t first = slot * cache.num_kv_heads + head;  // a token's scales are a row apart
                for (int64_t j = 0; j < count; ++j) {
                    k_scales[j] = cache.k_scale[first + j * cache.num_kv_heads];
                    v_scales[j] = cache.v_scale[first + j * cache.num_kv_heads];
                }
                for (int64_t j = count; j < kKeyChunk; ++j) k_scales[j] = v_scales[j] = 0.0f;
            },
            [&](int64_t r, auto rows, int64_t first, int64_t count, ChunkPrefetch& prefetch) {
                attend_rows<decltype(rows)::value>(q16 + r * D, q_scale + r, k_cache + first, v_cache + first,
                                                   stride, count, k_scales, v_scales, prefetch, o + r * D,
                                                   m + r, l + r);
            });
        reorder_rows<D>(o, num_rows);
        finish_f32_rows<D>(a, w, token, first_head, num_rows, num_rows, o, m, l);
    }
};

template <typename Fn>
bool dispatch_int8_decode_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<32, 64, 128, 256>(head_dim, std::forward<Fn>(fn));
}

}  // namespace

int64_t attention_decode_int8_avx2_scratch_floats(int64_t head_dim, int64_t num_rows) {
    int64_t floats = 0;
    dispatch_int8_decode_head_dim(
        head_dim, [&](auto d) { floats = Int8MaddDecodeAvx2<decltype(d)::value>::scratch_floats(num_rows); });
    return floats;
}

bool attention_decode_tile_int8_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    if (args.cache.dtype != DType::I8) return false;
    return dispatch_int8_decode_head_dim(args.cache.head_dim, [&](auto d) {
        Int8MaddDecodeAvx2<decltype(d)::value>::run(args, tile, scratch);
    });
}

}  // namespace lmrun::kernels
