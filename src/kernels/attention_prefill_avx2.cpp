// AVX2 prefill tiles (one KV head; any cache dtype), for CPUs without a BF16 dot product (AMD Zen
// 3), written as two small F32 GEMMs per key chunk, as the AVX512_BF16 prefill tile is: S = Q·Kᵀ
// with the chunk's 16 keys as the output lanes (two ymm), then O += P·V with 16 dims of head_dim
// as the output lanes. Per chunk the keys are widened to F32 and transposed once ([D][16]) and
// the values widened ([16][D]), and then every row of the tile (up to 64 (token, head) rows)
// reuses them, kRowBlock rows per pass: 12 accumulators, each loaded vector feeding kRowBlock
// FMAs, no horizontal sums in the scores. F32 throughout: the reference's accuracy.
// The tile it replaces for prefill (Avx2Tile, attention_avx2.cpp) computed each row alone: 16
// dot products folded by reduce8, a load per FMA, and P·V 64 dims at a time. kernel_bench, Zen 4
// VM at LMRUN_ISA=avx2, 16 heads, d=128, BF16 cache, 3 alternating rounds, per layer: 512-token
// prefill 10.6-11.6 -> 8.0-8.8 ms, 2048 tokens 152-168 -> 114-124 ms (151 GFLOP/s, 65% of the
// FMA loop). GCC keeps the accumulators in registers only with the row loops unrolled (the
// pragmas): without them it stored them to the stack every step, and the tile was 1.35x slower
// than the one it replaces.
#include <immintrin.h>

#include <cstring>

#include "kernels/attention_softmax_avx2.h"
#include "kernels/attention_tile.h"
#include "kernels/attention_tile_driver.h"
#include "kernels/dispatch_constant.h"
#include "kernels/isa_local_math.h"
#include "kernels/kv_widen_avx2.h"

namespace lmrun::kernels {
namespace {

// Rows per pass: 2 x kRowBlock accumulators, two loaded key (or value) vectors and a broadcast
// fit the 16 ymm registers at 6.
constexpr int kRowBlock = 6;

// An 8 x 8 block of floats transposed: rows[i][j] → out[j * out_stride + i].
inline void transpose_8x8(const float* rows, int64_t row_stride, float* out, int64_t out_stride) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(rows + i * row_stride);
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    const __m256 columns[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                               _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                               _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                               _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + j * out_stride, columns[j]);
}

template <int64_t D>
struct PrefillTileAvx2 {
    static_assert(D % 16 == 0);

    struct Rows {
        const float* q;  // [rows][D], scaled
        float* o;        // [rows][D]
        float* m;
        float* l;
        float* p;  // [rows][16]: the chunk's softmax weights
    };

    // The chunk's `count` rows of one cache (K or V) of KV head `kv_head` from `slot` on, as F32
    // [16][D]; rows count..15 are zero.
    static void widen_rows(const KvCacheLayer& cache, const void* base, const float* scales, int64_t slot,
                           int64_t kv_head, int64_t count, float* out) {
        for (int64_t j = 0; j < count; ++j) {
            const int64_t cache_row = (slot + j) * cache.num_kv_heads + kv_head;
            if (cache.dtype == DType::F32) {
                std::memcpy(out + j * D, static_cast<const float*>(base) + cache_row * D, D * sizeof(float));
            } else {
                widen_kv_row_avx2(base, cache.dtype, cache_row * D, scales ? scales[cache_row] : 1.0f, D,
                                  out + j * D);
            }
        }
        if (count < kKeyChunk)
            std::memset(out + count * D, 0, size_t((kKeyChunk - count) * D) * sizeof(float));
    }

    // keys_t[d][j] = keys[j][d]: the 16 keys as the lanes of two vectors per dim.
    static void transpose_keys(const float* keys, float* keys_t) {
        for (int64_t half = 0; half < 2; ++half)
            for (int64_t d = 0; d < D; d += 8)
                transpose_8x8(keys + half * 8 * D + d, D, keys_t + d * kKeyChunk + half * 8, kKeyChunk);
    }

    // Rows [r0, r0 + R) against the chunk: scores, online softmax, P·V. visible[i]: keys of the
    // chunk row r0 + i may see (a prefix, causal); count: the chunk's keys.
    template <int R>
    static void attend(const Rows& t, int64_t r0, const int64_t* visible, int64_t count, const float* keys_t,
                       const float* values) {
        __m256 s[R][2];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) s[r][0] = s[r][1] = _mm256_setzero_ps();
        for (int64_t d = 0; d < D; ++d) {
            const __m256 k0 = _mm256_loadu_ps(keys_t + d * kKeyChunk);
            const __m256 k1 = _mm256_loadu_ps(keys_t + d * kKeyChunk + 8);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m256 qb = _mm256_broadcast_ss(t.q + (r0 + r) * D + d);
                s[r][0] = _mm256_fmadd_ps(k0, qb, s[r][0]);
                s[r][1] = _mm256_fmadd_ps(k1, qb, s[r][1]);
            }
        }
        float correction[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const int64_t row = r0 + r;
            __m256 p_lo, p_hi;
            correction[r] = online_softmax16(s[r][0], s[r][1], visible[r], t.m[row], t.l[row], p_lo, p_hi);
            _mm256_storeu_ps(t.p + row * kKeyChunk, p_lo);
            _mm256_storeu_ps(t.p + row * kKeyChunk + 8, p_hi);
        }
        for (int64_t c = 0; c < D; c += 16) {  // 16 output dims at a time, all R rows
            __m256 acc[R][2];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m256 factor = _mm256_set1_ps(correction[r]);
                acc[r][0] = _mm256_mul_ps(_mm256_loadu_ps(t.o + (r0 + r) * D + c), factor);
                acc[r][1] = _mm256_mul_ps(_mm256_loadu_ps(t.o + (r0 + r) * D + c + 8), factor);
            }
            for (int64_t j = 0; j < count; ++j) {
                const __m256 v0 = _mm256_loadu_ps(values + j * D + c);
                const __m256 v1 = _mm256_loadu_ps(values + j * D + c + 8);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    const __m256 pb = _mm256_broadcast_ss(t.p + (r0 + r) * kKeyChunk + j);
                    acc[r][0] = _mm256_fmadd_ps(v0, pb, acc[r][0]);
                    acc[r][1] = _mm256_fmadd_ps(v1, pb, acc[r][1]);
                }
            }
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                _mm256_storeu_ps(t.o + (r0 + r) * D + c, acc[r][0]);
                _mm256_storeu_ps(t.o + (r0 + r) * D + c + 8, acc[r][1]);
            }
        }
    }

    static int64_t scratch_floats() { return 3 * kKeyChunk * D + kTileRows * (2 * D + 2 + kKeyChunk); }

    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const KvCacheLayer& cache = a.cache;
        const int64_t group = a.num_heads / cache.num_kv_heads;
        const int64_t num_rows = group * w.num_tokens;
        const int64_t q_begin = a.cu_seqlens_q[w.seq];
        const int64_t q_len = a.cu_seqlens_q[w.seq + 1] - q_begin;
        const int64_t first_token = q_begin + w.token_begin;
        const int64_t first_pos = a.context_lens[w.seq] - q_len + w.token_begin;
        const int64_t num_keys = min_i64(first_pos + w.num_tokens, w.key_end);
        float* keys_t = scratch;                 // [D][16]
        float* values = keys_t + kKeyChunk * D;  // [16][D]
        float* keys = values + kKeyChunk * D;    // [16][D], before the transpose
        float* q = keys + kKeyChunk * D;         // [rows][D]
        Rows t{q, q + num_rows * D, nullptr, nullptr, nullptr};
        t.m = t.o + num_rows * D;
        t.l = t.m + num_rows;
        t.p = t.l + num_rows;
        init_f32_rows<D>(a, first_token, w.kv_head * group, group, num_rows, q, t.o, t.m, t.l);
        const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
        for (int64_t key0 = w.key_begin; key0 < num_keys;) {
            const auto [slot, count] = key_chunk(cache, blocks, key0, num_keys);
            widen_rows(cache, cache.k, cache.k_scale, slot, w.kv_head, count, keys);
            transpose_keys(keys, keys_t);
            widen_rows(cache, cache.v, cache.v_scale, slot, w.kv_head, count, values);
            // Tokens before key0 see nothing of this chunk: start at the first that does.
            for (int64_t r = max_i64(0, key0 - first_pos) * group; r < num_rows;) {
                const int rows = int(min_i64(kRowBlock, num_rows - r));
                int64_t visible[kRowBlock];
                for (int i = 0; i < rows; ++i)
                    visible[i] = min_i64(count, first_pos + (r + i) / group - key0 + 1);
                // (count by value: a lambda may not capture a structured binding under clang's OpenMP)
                dispatch_constant<1, 2, 3, 4, 5, 6>(rows, [&, count = count](auto n) {
                    attend<decltype(n)::value>(t, r, visible, count, keys_t, values);
                });
                r += rows;
            }
            key0 += count;
        }
        finish_f32_rows<D>(a, w, first_token, w.kv_head * group, group, num_rows, t.o, t.m, t.l);
    }
};

template <typename Fn>
bool dispatch_prefill_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<16, 32, 64, 128, 256>(
        head_dim, [&](auto d) { fn(PrefillTileAvx2<decltype(d)::value>{}); });
}

}  // namespace

int64_t attention_prefill_avx2_scratch_floats(int64_t head_dim) {
    int64_t floats = 0;
    dispatch_prefill_head_dim(head_dim, [&](auto tile) { floats = decltype(tile)::scratch_floats(); });
    return floats;
}

bool attention_prefill_tile_avx2(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    const int64_t rows = args.num_heads / args.cache.num_kv_heads * tile.num_tokens;
    if (tile.kv_head_count != 1 || rows > kTileRows) return false;
    return dispatch_prefill_head_dim(args.cache.head_dim,
                                     [&](auto t) { decltype(t)::run(args, tile, scratch); });
}

}  // namespace lmrun::kernels
