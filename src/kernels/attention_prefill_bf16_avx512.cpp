// Prefill tiles on a BF16 cache with AVX512_BF16, written as two small GEMMs per key chunk
// (flash attention's shape): S = Q·Kᵀ with the 16 keys of the chunk as the output lanes, then
// O += P·V with head_dim as the output lanes. Per chunk and KV head the keys are gathered once
// into k-pair-major order (16 keys per zmm) and the values interleaved by key pairs, and then
// every row of the tile (up to 64 (token, head) rows) reuses them: no horizontal sums, no
// widening. q and p are rounded to BF16, sums are F32 (as in the decode tile).
// Measured (kernel_bench, 16 heads, d=128, 2 threads, per layer): a 512-token prompt 12.5 -> 6-8 ms,
// 2048 tokens ~150 -> 88-100 ms, against the F32 tile it replaces.
// Int8 and fp8 caches take the same path: a chunk's bytes become BF16 exactly (an int8, or an
// fp8 value / 256), the keys' scales multiply the 16 scores and the values' scales the softmax
// weights, as the AMX prefill tile does. They had gone to the generic F32 tile (widened rows,
// a horizontal sum per score), which took 1.8x the BF16 cache's attention time in a prefill.

#include "kernels/avx512_intrinsics.h"

#include <math.h>

#include <cstdint>

#include "core/check.h"
#include "kernels/attention_bf16_lanes.h"
#include "kernels/attention_tile.h"
#include "kernels/dispatch_constant.h"
#include "kernels/isa_local_math.h"
#include "kernels/kv_bytes_avx512.h"
#include "kernels/online_softmax_avx512.h"
#include "kernels/transpose_avx512.h"

namespace lmrun::kernels {
namespace {

// Rows sharing each loaded K / V vector. Each vdpbf16ps also loads its q or p broadcast, so at
// 4 rows the loads (5 per 4 vdpbf16ps) held the tile back; 8 rows: kernel_bench (Zen 5 VM, 16
// heads, d=128, 3 alternating rounds) 2048-token prefill 42.6-43.3 -> 36.5-37.3 ms per layer.
constexpr int kRowBlock = 8;

template <int64_t D>
struct PrefillTile {
    static constexpr int64_t kPairs = D / 2;      // k-pairs (dwords) per row
    static constexpr int64_t kPairVecs = D / 32;  // zmm of 32 BF16 per row

    // keys_t[p] = dword p (dims 2p, 2p+1) of each of the chunk's keys, key j in lane j; lanes
    // past `count` are zero. Loaded as rows and transposed 16 dwords at a time; a gather per
    // dword pair, as before, made the whole tile 1.07-1.15x slower (kernel_bench, Zen 5 VM, 16
    // heads, d=128, 3 alternating rounds: 512-token prefill 2.73-2.84 against 3.13-3.17 ms per
    // layer, 2048 tokens 41-42 against 44.6-52.6 ms).
    static void gather_keys(const uint16_t* first_key, int64_t stride, int64_t count, __m512i* keys_t) {
        for (int64_t g = 0; g < kPairs / 16; ++g) {
            __m512i r[16];
            for (int64_t j = 0; j < 16; ++j)
                r[j] =
                    j < count ? _mm512_loadu_si512(first_key + j * stride + 32 * g) : _mm512_setzero_si512();
            transpose_16x16_dwords(r);
            for (int64_t p = 0; p < 16; ++p) keys_t[16 * g + p] = r[p];
        }
    }

    // values_i[pair][2c + h]: keys 2·pair and 2·pair+1 interleaved over dims 32c.., low (h = 0)
    // or high (h = 1) halves of each 128-bit lane; an odd last key pairs with zeros.
    static void interleave_values(const uint16_t* first_value, int64_t stride, int64_t count,
                                  __m512i* values_i) {
        for (int64_t pair = 0; 2 * pair < count; ++pair) {
            const uint16_t* row_a = first_value + 2 * pair * stride;
            const bool has_b = 2 * pair + 1 < count;
            for (int64_t c = 0; c < kPairVecs; ++c) {
                __m512i va = _mm512_loadu_si512(row_a + 32 * c);
                __m512i vb = has_b ? _mm512_loadu_si512(row_a + stride + 32 * c) : _mm512_setzero_si512();
                values_i[pair * 2 * kPairVecs + 2 * c] = _mm512_unpacklo_epi16(va, vb);
                values_i[pair * 2 * kPairVecs + 2 * c + 1] = _mm512_unpackhi_epi16(va, vb);
            }
        }
    }

    struct Rows {
        const uint16_t* q;  // [rows][D] BF16, scaled
        float* o;           // [rows][D], lanes permuted
        float* m;
        float* l;           // [rows][16]: the softmax weights' running sum per lane, added up at the end
        uint32_t* p_pairs;  // [rows][8]: the chunk's softmax weights as BF16 pairs
    };

    // Rows [r0, r0 + R) against the chunk: scores, online softmax, P·V. visible[i]: keys of the
    // chunk row r0 + i may see (a prefix, causal).
    // key_scale, value_scale: per key of the chunk (lane j), 1 on a BF16 cache.
    template <int R>
    static void attend(const Rows& t, int64_t r0, const int64_t* visible, int64_t count,
                       const __m512i* keys_t, const __m512i* values_i, __m512 key_scale, __m512 value_scale) {
        // Two accumulators per row: a vdpbf16ps chain is latency-bound with only R in flight.
        __m512 s[R], s_odd[R];
        for (int r = 0; r < R; ++r) s[r] = s_odd[r] = _mm512_setzero_ps();
        const auto* q_pairs = reinterpret_cast<const int32_t*>(t.q);
        for (int64_t p = 0; p < kPairs; p += 2) {
            const __m512bh k0 = (__m512bh)keys_t[p], k1 = (__m512bh)keys_t[p + 1];
            for (int r = 0; r < R; ++r) {
                const int32_t* qp = q_pairs + (r0 + r) * kPairs + p;
                s[r] = _mm512_dpbf16_ps(s[r], k0, (__m512bh)_mm512_set1_epi32(qp[0]));
                s_odd[r] = _mm512_dpbf16_ps(s_odd[r], k1, (__m512bh)_mm512_set1_epi32(qp[1]));
            }
        }
        for (int r = 0; r < R; ++r) s[r] = _mm512_mul_ps(_mm512_add_ps(s[r], s_odd[r]), key_scale);
        float correction[R];
        for (int r = 0; r < R; ++r) {
            const int64_t row = r0 + r;
            const __mmask16 seen = __mmask16((1u << visible[r]) - 1);
            // l kept per lane, summed once at the end: no horizontal sum per row and chunk
            // (kernel_bench, 2048-token prefill: 33.0-34.7 against 35.6-36.9 ms per layer, 6
            // alternating rounds).
            const __m512 prob = online_softmax_weights(s[r], seen, t.m[row], correction[r]);
            float* l = t.l + row * 16;
            _mm512_storeu_ps(l, _mm512_fmadd_ps(_mm512_loadu_ps(l), _mm512_set1_ps(correction[r]), prob));
            __m256bh packed = _mm512_cvtneps_pbh(_mm512_mul_ps(prob, value_scale));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(t.p_pairs + row * 8), (__m256i)packed);
        }
        const int64_t num_pairs = (count + 1) / 2;
        for (int64_t v = 0; v < 2 * kPairVecs; ++v) {  // 16 output dims at a time, all R rows
            __m512 acc[R];
            for (int r = 0; r < R; ++r)
                acc[r] = _mm512_mul_ps(_mm512_loadu_ps(t.o + (r0 + r) * D + 16 * v),
                                       _mm512_set1_ps(correction[r]));
            for (int64_t pair = 0; pair < num_pairs; ++pair) {
                const __m512bh vals = (__m512bh)values_i[pair * 2 * kPairVecs + v];
                for (int r = 0; r < R; ++r)
                    acc[r] = _mm512_dpbf16_ps(
                        acc[r], vals, (__m512bh)_mm512_set1_epi32(int32_t(t.p_pairs[(r0 + r) * 8 + pair])));
            }
            for (int r = 0; r < R; ++r) _mm512_storeu_ps(t.o + (r0 + r) * D + 16 * v, acc[r]);
        }
    }

    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t num_rows = group * w.num_tokens;
        const int64_t q_begin = a.cu_seqlens_q[w.seq];
        const int64_t q_len = a.cu_seqlens_q[w.seq + 1] - q_begin;
        const int64_t first_pos = a.context_lens[w.seq] - q_len + w.token_begin;
        const int64_t num_keys = min_i64(first_pos + w.num_tokens, w.key_end);
        // Scratch: vectors first (64-byte aligned), then the rows.
        const size_t misalignment = reinterpret_cast<uintptr_t>(scratch) % 64;
        auto* keys_t = reinterpret_cast<__m512i*>(scratch + (misalignment ? (64 - misalignment) / 4 : 0));
        __m512i* values_i = keys_t + kPairs;  // [8 pairs][2 kPairVecs]
        auto* row_base = reinterpret_cast<float*>(values_i + int64_t{16} * kPairVecs);
        Rows t;
        t.o = row_base;  // [rows][D]
        t.m = t.o + num_rows * D;
        t.l = t.m + num_rows;
        t.p_pairs = reinterpret_cast<uint32_t*>(t.l + 16 * num_rows);  // [rows][8]
        auto* q = reinterpret_cast<uint16_t*>(t.p_pairs + num_rows * 8);
        t.q = q;
        uint16_t* k_bf16 = q + num_rows * D;        // [16][D]: an int8 / fp8 chunk's keys as BF16
        uint16_t* v_bf16 = k_bf16 + kKeyChunk * D;  // and its values
        const __m512 scale = _mm512_set1_ps(a.scale);
        for (int64_t r = 0; r < num_rows; ++r) {
            const int64_t token = q_begin + w.token_begin + r / group;
            const float* src = a.q + token * a.q_token_stride + (w.kv_head * group + r % group) * D;
            for (int64_t d = 0; d < D; d += 16) {
                __m256bh packed = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_loadu_ps(src + d), scale));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + r * D + d), (__m256i)packed);
                _mm512_storeu_ps(t.o + r * D + d, _mm512_setzero_ps());
            }
            t.m[r] = -INFINITY;
            _mm512_storeu_ps(t.l + 16 * r, _mm512_setzero_ps());
        }
        const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
        const int64_t stride = cache.num_kv_heads * D;
        const bool scaled = kv_dtype_is_scaled(cache.dtype);
        const bool fp8 = cache.dtype == DType::F8E4M3;
        const float byte_unit = fp8 ? 256.0f : 1.0f;  // bytes32_as_bf16 gives fp8 values / 256
        __m512 key_scale = _mm512_set1_ps(1.0f), value_scale = key_scale;
        for (int64_t key0 = w.key_begin; key0 < num_keys;) {
            const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
            const int64_t first = (slot * cache.num_kv_heads + w.kv_head) * D;
            if (scaled) {
                alignas(64) float k_scales[kKeyChunk] = {}, v_scales[kKeyChunk] = {};
                for (int64_t j = 0; j < count; ++j) {
                    const int64_t row = (slot + j) * cache.num_kv_heads + w.kv_head;
                    k_scales[j] = cache.k_scale[row] * byte_unit;
                    v_scales[j] = cache.v_scale[row] * byte_unit;
                    for (int64_t c = 0; c < D / 32; ++c) {
                        const auto* k_bytes = static_cast<const uint8_t*>(cache.k) + row * D + 32 * c;
                        const auto* v_bytes = static_cast<const uint8_t*>(cache.v) + row * D + 32 * c;
                        _mm512_storeu_si512(k_bf16 + j * D + 32 * c, bytes32_as_bf16(k_bytes, fp8));
                        _mm512_storeu_si512(v_bf16 + j * D + 32 * c, bytes32_as_bf16(v_bytes, fp8));
                    }
                }
                key_scale = _mm512_load_ps(k_scales);
                value_scale = _mm512_load_ps(v_scales);
                gather_keys(k_bf16, D, count, keys_t);
                interleave_values(v_bf16, D, count, values_i);
            } else {
                gather_keys(static_cast<const uint16_t*>(cache.k) + first, stride, count, keys_t);
                interleave_values(static_cast<const uint16_t*>(cache.v) + first, stride, count, values_i);
            }
            // Tokens before key0 see nothing of this chunk: start at the first that does.
            int64_t r = max_i64(0, key0 - first_pos) * group;
            while (r < num_rows) {
                const int rows = int(min_i64(kRowBlock, num_rows - r));
                int64_t visible[kRowBlock];
                for (int i = 0; i < rows; ++i)
                    visible[i] = min_i64(count, first_pos + (r + i) / group - key0 + 1);
                // (count by value: a lambda may not capture a structured binding under clang's OpenMP)
                dispatch_constant<1, 2, 3, 4, 5, 6, 7, 8>(rows, [&, count = count](auto n) {
                    attend<decltype(n)::value>(t, r, visible, count, keys_t, values_i, key_scale,
                                               value_scale);
                });
                r += rows;
            }
            key0 += count;
        }
        if (w.partial) {  // split-K: the unnormalised state, merged by attention.cpp
            for (int64_t row = 0; row < num_rows; ++row) {
                store_bf16_pv_row(t.o + row * D, D, 1.0f, w.partial + row * D);
                store_partial_softmax_state(w.partial, D, row, t.m[row],
                                            _mm512_reduce_add_ps(_mm512_loadu_ps(t.l + 16 * row)));
            }
            return;
        }
        for (int64_t row = 0; row < num_rows; ++row) {
            const int64_t token = q_begin + w.token_begin + row / group;
            store_bf16_pv_row(t.o + row * D, D, 1.0f / _mm512_reduce_add_ps(_mm512_loadu_ps(t.l + 16 * row)),
                              a.out + (token * a.num_heads + w.kv_head * group + row % group) * D);
        }
    }

    static int64_t scratch_floats() {
        return 16 + (kPairs + int64_t{16} * kPairVecs) * 16 + kTileRows * (D + 1 + 16 + 8) +
               kTileRows * D / 2 + kKeyChunk * D;
    }
};

template <typename Fn>
bool dispatch_bf16_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<32, 64, 128, 256>(head_dim,
                                               [&](auto d) { fn(PrefillTile<decltype(d)::value>{}); });
}

}  // namespace

int64_t attention_prefill_bf16_scratch_floats(int64_t head_dim) {
    int64_t floats = 0;
    dispatch_bf16_head_dim(head_dim, [&](auto tile) { floats = decltype(tile)::scratch_floats(); });
    return floats;
}

void attention_prefill_tile_bf16(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    LMRUN_CHECK(tile.kv_head_count == 1, "prefill tiles cover one KV head");
    const bool supported =
        dispatch_bf16_head_dim(args.cache.head_dim, [&](auto t) { decltype(t)::run(args, tile, scratch); });
    LMRUN_CHECK(supported, "no BF16 prefill tile for head_dim %ld", long(args.cache.head_dim));
}

}  // namespace lmrun::kernels
