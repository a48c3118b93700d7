// Prefill tiles with AMX-BF16 (Sapphire Rapids): flash attention's two GEMMs on tiles, per
// segment of up to kSegmentKeys keys of one KV head.
//   - Once per segment (shared by every row of the work item): the keys transposed into Kᵀ
//     B tiles (a tile row is one dim pair of 16 keys) and the values interleaved by key pairs
//     into V B tiles (a tile row is one key pair of 16 dims).
//   - Per block of 16 (token, head) rows: S = Q·Kᵀ on tiles (four 16-key C tiles at a time),
//     stored as F32 (times each key's scale on an int8 / fp8 cache); the segment's softmax in
//     AVX-512 (one max and one rescale of the output per row per segment, not per 16 keys);
//     P (times each value's scale) rounded to BF16; O += P·V on tiles that are loaded from the
//     row block's F32 output and stored back.
// An int8 or fp8 cache enters the tiles as its byte values, which BF16 holds exactly
// (kv_bytes_avx512.h); the per-row scales are applied to S's columns and P's columns instead,
// so such a cache adds no rounding of its own.
// q and p are rounded to BF16 and sums are F32, as in the AVX512_BF16 tiles. The tile
// configuration (linear_amx.h) is the caller's: paged_attention loads it on each thread.

#include "kernels/avx512_intrinsics.h"

#include <math.h>

#include <cstdint>

#include "core/check.h"
#include "kernels/attention_tile.h"
#include "kernels/dispatch_constant.h"
#include "kernels/isa_local_math.h"
#include "kernels/kv_bytes_avx512.h"
#include "kernels/transpose_avx512.h"

namespace lmrun::kernels {
namespace {

constexpr int64_t kSegmentKeys = 256;  // keys per pass: their Kᵀ, V, S and P stay in L2
constexpr int64_t kBlockRows = 16;     // rows of an A / C tile
constexpr int64_t kKeysPerTile = 16;   // keys of an S tile (its N)
constexpr int64_t kKeysPerStep = 32;   // keys of a P·V step (its K: 16 key pairs)

// e^x for x <= 0, to the 1e-4 that BF16 softmax weights keep (8 operations where the full-
// precision exp_avx512 takes 14): 2^(x·log2 e) = 2^n · 2^f with f in [-0.5, 0.5] and 2^f by a
// degree-3 fit (relative error 7.8e-5). x is clamped at -87 first, so the result stays a normal
// float: scalef making subnormals would cost a microcode assist per lane.
inline __m512 exp_nonpositive_for_bf16(__m512 x) {
    const __m512 t = _mm512_mul_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(1.44269504f));
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0.05508797f), f, _mm512_set1_ps(0.24260082f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.69327605f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.99992913f));
    return _mm512_scalef_ps(p, n);
}

template <int64_t D>
struct AmxPrefillTile {
    static constexpr int64_t kPairs = D / 2;      // dim pairs (dwords) of a key or query row
    static constexpr int64_t kDimSteps = D / 32;  // A tiles of a query row block
    static constexpr int64_t kDimTiles = D / 16;  // C tiles of an output row block

    struct Scratch {
        uint16_t* q;     // [kAmxTileRows][D] BF16, scaled
        float* o;        // [kAmxTileRows][D] unnormalised output
        float* m;        // [kAmxTileRows] running max
        float* l;        // [kAmxTileRows] running sum
        int32_t* kt;     // [kSegmentKeys / 16][kPairs][16]: Kᵀ B tiles
        int32_t* vv;     // [kSegmentKeys / 2][D]: V B tiles (dword = the dim of a key pair)
        float* s;        // [16][kSegmentKeys] scores of a row block
        uint16_t* p;     // [16][kSegmentKeys] BF16 softmax weights of a row block
        float* k_scale;  // [kSegmentKeys] the segment's key scales (int8 / fp8 caches)
        float* v_scale;  // [kSegmentKeys] its value scales, 0 past its keys
    };

    static int64_t scratch_floats() {
        return 16 + kAmxTileRows * D / 2 + kAmxTileRows * D + 2 * kAmxTileRows + kSegmentKeys * D / 2 +
               kSegmentKeys * D / 2 + kBlockRows * kSegmentKeys + kBlockRows * kSegmentKeys / 2 +
               2 * kSegmentKeys;
    }

    static Scratch carve(float* scratch) {
        const size_t misalignment = reinterpret_cast<uintptr_t>(scratch) % 64;
        float* base = scratch + (misalignment ? (64 - misalignment) / 4 : 0);
        Scratch t;
        t.kt = reinterpret_cast<int32_t*>(base);
        t.vv = t.kt + kSegmentKeys * kPairs;
        t.s = reinterpret_cast<float*>(t.vv + kSegmentKeys / 2 * D);
        t.p = reinterpret_cast<uint16_t*>(t.s + kBlockRows * kSegmentKeys);
        t.o = reinterpret_cast<float*>(t.p + kBlockRows * kSegmentKeys);
        t.q = reinterpret_cast<uint16_t*>(t.o + kAmxTileRows * D);
        t.m = reinterpret_cast<float*>(t.q + kAmxTileRows * D);
        t.l = t.m + kAmxTileRows;
        t.k_scale = t.l + kAmxTileRows;
        t.v_scale = t.k_scale + kSegmentKeys;
        return t;
    }

    // The cache row (its index: slot · num_kv_heads + kv_head) of key `key` (absolute position)
    // of the work item's sequence and KV head.
    static int64_t row_index(const AttentionArgs& a, const int32_t* blocks, int64_t kv_head, int64_t key) {
        const KvCacheLayer& cache = a.cache;
        const int64_t slot =
            int64_t(blocks[key / cache.block_size]) * cache.block_size + key % cache.block_size;
        return slot * cache.num_kv_heads + kv_head;
    }

    // Elements [32c, 32c + 32) of cache row `row` as BF16 (an int8 / fp8 row before its scale).
    static __m512i row_bf16x32(const void* base, DType dtype, int64_t row, int64_t c) {
        if (dtype == DType::BF16)
            return _mm512_loadu_si512(static_cast<const uint16_t*>(base) + row * D + 32 * c);
        return bytes32_as_bf16(static_cast<const uint8_t*>(base) + row * D + 32 * c, dtype == DType::F8E4M3);
    }

    // The scales of keys and values [0, count) of the segment into t.k_scale and t.v_scale (fp8
    // bytes enter as value / 256, so its unit is folded in); value scales past count up to
    // `padded` are 0, so that P's zero weights there stay zero.
    static void gather_scales(const AttentionArgs& a, const int64_t* rows, int64_t count, int64_t padded,
                              const Scratch& t) {
        const float unit = a.cache.dtype == DType::F8E4M3 ? 256.0f : 1.0f;
        for (int64_t j = 0; j < padded; ++j) {
            t.k_scale[j] = j < count ? a.cache.k_scale[rows[j]] * unit : 0.0f;
            t.v_scale[j] = j < count ? a.cache.v_scale[rows[j]] * unit : 0.0f;
        }
    }

    // Kᵀ and V tiles of keys [seg0, seg0 + count); keys past count up to the tiles' end are zero.
    static void prepare_segment(const AttentionArgs& a, const int32_t* blocks, int64_t kv_head, int64_t seg0,
                                int64_t count, const Scratch& t) {
        const DType dtype = a.cache.dtype;
        int64_t rows[kSegmentKeys];
        for (int64_t j = 0; j < count; ++j) rows[j] = row_index(a, blocks, kv_head, seg0 + j);
        const int64_t padded = (count + kKeysPerStep - 1) / kKeysPerStep * kKeysPerStep;
        if (dtype != DType::BF16) gather_scales(a, rows, count, padded, t);
        for (int64_t chunk = 0; chunk * kKeysPerTile < count; ++chunk) {
            const int64_t* chunk_rows = rows + chunk * kKeysPerTile;
            const int64_t n = min_i64(kKeysPerTile, count - chunk * kKeysPerTile);
            for (int64_t g = 0; g < kPairs / 16; ++g) {  // 16 dim pairs (32 dims) at a time
                __m512i r[16];
                for (int64_t j = 0; j < 16; ++j)
                    r[j] = j < n ? row_bf16x32(a.cache.k, dtype, chunk_rows[j], g) : _mm512_setzero_si512();
                transpose_16x16_dwords(r);
                int32_t* dst = t.kt + (chunk * kPairs + 16 * g) * 16;
                for (int64_t p = 0; p < 16; ++p) _mm512_store_si512(dst + 16 * p, r[p]);
            }
        }
        // Value pairs: dword d of pair j = (V[2j][d], V[2j + 1][d]), up to a whole P·V step.
        alignas(64) static constexpr uint16_t kInterleave[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                                 37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                                 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
        const __m512i low = _mm512_load_si512(kInterleave);  // a0 b0 a1 b1 ... a15 b15
        const __m512i high = _mm512_add_epi16(low, _mm512_set1_epi16(16));
        for (int64_t pair = 0; 2 * pair < padded; ++pair) {
            const int64_t key = 2 * pair;
            int32_t* dst = t.vv + pair * D;
            for (int64_t c = 0; c < D / 32; ++c) {
                const __m512i va =
                    key < count ? row_bf16x32(a.cache.v, dtype, rows[key], c) : _mm512_setzero_si512();
                const __m512i vb = key + 1 < count ? row_bf16x32(a.cache.v, dtype, rows[key + 1], c)
                                                   : _mm512_setzero_si512();
                _mm512_store_si512(dst + 32 * c, _mm512_permutex2var_epi16(va, low, vb));
                _mm512_store_si512(dst + 32 * c + 16, _mm512_permutex2var_epi16(va, high, vb));
            }
        }
    }

    // S[16][0, keys) = Q[rows r0..r0+16) · Kᵀ, four 16-key tiles per pass over Q.
    static void scores(const Scratch& t, int64_t r0, int64_t keys) {
        const int64_t tiles = (keys + kKeysPerTile - 1) / kKeysPerTile;
        for (int64_t first = 0; first < tiles; first += 4) {
            const int64_t n = min_i64(4, tiles - first);
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t step = 0; step < kDimSteps; ++step) {
                _tile_loadd(4, t.q + r0 * D + 32 * step, D * 2);
                const int32_t* b = t.kt + (first * kPairs + 16 * step) * 16;
                // Tiles are named by immediates: each of the four products is spelled out.
                _tile_loadd(5, b, 64);
                _tile_dpbf16ps(0, 4, 5);
                if (n > 1) {
                    _tile_loadd(6, b + kPairs * 16, 64);
                    _tile_dpbf16ps(1, 4, 6);
                }
                if (n > 2) {
                    _tile_loadd(5, b + 2 * kPairs * 16, 64);
                    _tile_dpbf16ps(2, 4, 5);
                }
                if (n > 3) {
                    _tile_loadd(6, b + 3 * kPairs * 16, 64);
                    _tile_dpbf16ps(3, 4, 6);
                }
            }
            float* s = t.s + first * kKeysPerTile;
            _tile_stored(0, s, kSegmentKeys * 4);
            if (n > 1) _tile_stored(1, s + 16, kSegmentKeys * 4);
            if (n > 2) _tile_stored(2, s + 32, kSegmentKeys * 4);
            if (n > 3) _tile_stored(3, s + 48, kSegmentKeys * 4);
        }
    }

    // Row i of the block sees keys [0, visible[i]) of the segment: its softmax update, P in BF16
    // up to `padded` keys (zeros past what it sees), and its output rescaled. `scaled` (an int8 /
    // fp8 cache): the scores are first multiplied by their keys' scales, and P's weights (not
    // the sum) by their values' scales.
    static void softmax_rows(const Scratch& t, int64_t r0, const int64_t* visible, int64_t padded,
                             bool scaled) {
        for (int64_t i = 0; i < kBlockRows; ++i) {
            const int64_t row = r0 + i;
            float* s = t.s + i * kSegmentKeys;
            uint16_t* p = t.p + i * kSegmentKeys;
            const int64_t seen = visible[i];
            if (seen <= 0) {
                for (int64_t k = 0; k < padded; k += 32) _mm512_store_si512(p + k, _mm512_setzero_si512());
                continue;
            }
            __m512 max = _mm512_set1_ps(-INFINITY);
            for (int64_t k = 0; k < seen; k += 16) {
                const __mmask16 valid =
                    seen - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (seen - k)) - 1);
                __m512 score = _mm512_loadu_ps(s + k);
                if (scaled) {
                    score = _mm512_mul_ps(score, _mm512_loadu_ps(t.k_scale + k));
                    _mm512_storeu_ps(s + k, score);
                }
                max = _mm512_mask_max_ps(max, valid, max, score);
            }
            const float m_new = max_f32(t.m[row], _mm512_reduce_max_ps(max));
            const float correction = softmax_correction(t.m[row], m_new);
            const __m512 shift = _mm512_set1_ps(m_new);
            __m512 sum = _mm512_setzero_ps();
            for (int64_t k = 0; k < padded; k += 32) {
                __m512 e[2];
                for (int64_t h = 0; h < 2; ++h) {
                    const int64_t left = seen - (k + 16 * h);
                    const __mmask16 valid = left >= 16 ? __mmask16(0xffff)
                                            : left > 0 ? __mmask16((1u << left) - 1)
                                                       : __mmask16(0);
                    // Lanes past what the row sees read m: e^0, then zeroed.
                    const __m512 x = _mm512_sub_ps(_mm512_mask_loadu_ps(shift, valid, s + k + 16 * h), shift);
                    e[h] = _mm512_maskz_mov_ps(valid, exp_nonpositive_for_bf16(x));
                    sum = _mm512_add_ps(sum, e[h]);
                    if (scaled) e[h] = _mm512_mul_ps(e[h], _mm512_loadu_ps(t.v_scale + k + 16 * h));
                }
                _mm512_store_si512(p + k, (__m512i)_mm512_cvtne2ps_pbh(e[1], e[0]));
            }
            t.l[row] = t.l[row] * correction + _mm512_reduce_add_ps(sum);
            t.m[row] = m_new;
            if (correction != 1.0f) {
                const __m512 factor = _mm512_set1_ps(correction);
                float* o = t.o + row * D;
                for (int64_t d = 0; d < D; d += 16)
                    _mm512_store_ps(o + d, _mm512_mul_ps(_mm512_load_ps(o + d), factor));
            }
        }
    }

    // O[rows r0..r0+16) += P[16][0, padded) · V, four 16-dim tiles per pass over P.
    static void accumulate_values(const Scratch& t, int64_t r0, int64_t padded) {
        for (int64_t first = 0; first < kDimTiles; first += 4) {  // D is a multiple of 32: 2 or 4 tiles
            float* o = t.o + r0 * D + 16 * first;
            const bool four = kDimTiles - first >= 4;
            _tile_loadd(0, o, D * 4);
            _tile_loadd(1, o + 16, D * 4);
            if (four) {
                _tile_loadd(2, o + 32, D * 4);
                _tile_loadd(3, o + 48, D * 4);
            }
            for (int64_t k = 0; k < padded; k += kKeysPerStep) {
                _tile_loadd(4, t.p + k, kSegmentKeys * 2);
                const int32_t* b = t.vv + (k / 2) * D + 16 * first;
                _tile_loadd(5, b, D * 4);
                _tile_dpbf16ps(0, 4, 5);
                _tile_loadd(6, b + 16, D * 4);
                _tile_dpbf16ps(1, 4, 6);
                if (four) {
                    _tile_loadd(5, b + 32, D * 4);
                    _tile_dpbf16ps(2, 4, 5);
                    _tile_loadd(6, b + 48, D * 4);
                    _tile_dpbf16ps(3, 4, 6);
                }
            }
            _tile_stored(0, o, D * 4);
            _tile_stored(1, o + 16, D * 4);
            if (four) {
                _tile_stored(2, o + 32, D * 4);
                _tile_stored(3, o + 48, D * 4);
            }
        }
    }

    static void run(const AttentionArgs& a, const AttentionTile& w, float* scratch) {
        const Scratch t = carve(scratch);
        const int64_t group = a.num_heads / a.cache.num_kv_heads;
        const int64_t num_rows = group * w.num_tokens;
        const int64_t padded_rows = (num_rows + kBlockRows - 1) / kBlockRows * kBlockRows;
        const int64_t q_begin = a.cu_seqlens_q[w.seq];
        const int64_t q_len = a.cu_seqlens_q[w.seq + 1] - q_begin;
        const int64_t first_pos = a.context_lens[w.seq] - q_len + w.token_begin;
        const int64_t num_keys = min_i64(first_pos + w.num_tokens, w.key_end);
        const __m512 scale = _mm512_set1_ps(a.scale);
        for (int64_t r = 0; r < padded_rows; ++r) {
            const int64_t token = q_begin + w.token_begin + r / group;
            const float* src = a.q + token * a.q_token_stride + (w.kv_head * group + r % group) * D;
            for (int64_t d = 0; d < D; d += 16) {
                const __m512 x =
                    r < num_rows ? _mm512_mul_ps(_mm512_loadu_ps(src + d), scale) : _mm512_setzero_ps();
                _mm256_store_si256(reinterpret_cast<__m256i*>(t.q + r * D + d),
                                   (__m256i)_mm512_cvtneps_pbh(x));
                _mm512_store_ps(t.o + r * D + d, _mm512_setzero_ps());
            }
            t.m[r] = -INFINITY;
            t.l[r] = 0.0f;
        }
        const int32_t* blocks = a.block_tables + w.seq * a.max_blocks_per_seq;
        for (int64_t seg0 = w.key_begin; seg0 < num_keys; seg0 += kSegmentKeys) {
            const int64_t count = min_i64(kSegmentKeys, num_keys - seg0);
            prepare_segment(a, blocks, w.kv_head, seg0, count, t);
            for (int64_t r0 = 0; r0 < padded_rows; r0 += kBlockRows) {
                int64_t visible[kBlockRows];
                int64_t most = 0;
                for (int64_t i = 0; i < kBlockRows; ++i) {
                    const int64_t row = r0 + i;
                    visible[i] = row < num_rows ? min_i64(count, first_pos + row / group - seg0 + 1) : 0;
                    most = max_i64(most, visible[i]);
                }
                if (most <= 0) continue;  // the whole block's tokens come before the segment
                const int64_t padded = (most + kKeysPerStep - 1) / kKeysPerStep * kKeysPerStep;
                scores(t, r0, most);
                softmax_rows(t, r0, visible, padded, a.cache.dtype != DType::BF16);
                accumulate_values(t, r0, padded);
            }
        }
        if (w.partial) {  // split-K (items of at most kTileRows rows): the unnormalised state
            for (int64_t row = 0; row < num_rows; ++row) {
                for (int64_t d = 0; d < D; d += 16)
                    _mm512_storeu_ps(w.partial + row * D + d, _mm512_load_ps(t.o + row * D + d));
                store_partial_softmax_state(w.partial, D, row, t.m[row], t.l[row]);
            }
            return;
        }
        for (int64_t row = 0; row < num_rows; ++row) {
            const int64_t token = q_begin + w.token_begin + row / group;
            float* out = a.out + (token * a.num_heads + w.kv_head * group + row % group) * D;
            const __m512 factor = _mm512_set1_ps(1.0f / t.l[row]);
            for (int64_t d = 0; d < D; d += 16)
                _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_load_ps(t.o + row * D + d), factor));
        }
    }
};

template <typename Fn>
bool dispatch_amx_head_dim(int64_t head_dim, Fn&& fn) {
    return dispatch_constant<32, 64, 128, 256>(head_dim,
                                               [&](auto d) { fn(AmxPrefillTile<decltype(d)::value>{}); });
}

}  // namespace

bool attention_prefill_amx_supports(int64_t head_dim) {
    return dispatch_amx_head_dim(head_dim, [](auto) {});
}

int64_t attention_prefill_amx_scratch_floats(int64_t head_dim) {
    int64_t floats = 0;
    dispatch_amx_head_dim(head_dim, [&](auto tile) { floats = decltype(tile)::scratch_floats(); });
    return floats;
}

void attention_prefill_tile_amx(const AttentionArgs& args, const AttentionTile& tile, float* scratch) {
    LMRUN_CHECK(tile.kv_head_count == 1, "prefill tiles cover one KV head");
    const int64_t rows = tile.num_tokens * (args.num_heads / args.cache.num_kv_heads);
    LMRUN_CHECK(rows <= (tile.partial ? kTileRows : kAmxTileRows), "AMX prefill tile of %ld rows",
                long(rows));
    const bool supported =
        dispatch_amx_head_dim(args.cache.head_dim, [&](auto t) { decltype(t)::run(args, tile, scratch); });
    LMRUN_CHECK(supported, "no AMX prefill tile for head_dim %ld", long(args.cache.head_dim));
}

}  // namespace lmrun::kernels
