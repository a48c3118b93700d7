// AVX2 int8 kernels (arithmetic in linear_int8.h): the per-row activation quantizer every int8
// path uses, and the sign-trick micro-kernel: vpmaddubsw(|q_x|, q_w · sign(q_x)) gives int16
// pair sums that cannot saturate (|q| ≤ 127), vpmaddwd with ones widens them to int32. A call
// covers the tile's 64 outputs: one row in one pass over the chunk (8 accumulators), two rows in
// two passes of 32 (16 ymm registers hold no more; that step is inline asm, quad_2x4), prefetching
// the next chunk as it goes. A call of one row (batch-1 decode) has its own kernel: two weight
// streams per tile (below).
#include <immintrin.h>

#include <cmath>

#include "core/parallel.h"
#include "kernels/linear_int8.h"
#include "kernels/linear_int8_driver.h"

namespace lmrun::kernels {
namespace {

// row_abs_max on 8 lanes (the same result for finite rows: a maximum does not depend on the order).
float row_abs_max_avx2(const float* x, int64_t count) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 max = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= count; k += 8) max = _mm256_max_ps(max, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, max);
    float result = 0.0f;
    for (float lane : lanes) result = lane > result ? lane : result;
    for (; k < count; ++k) result = std::fabs(x[k]) > result ? std::fabs(x[k]) : result;
    return result;
}

// 8 floats → 8 int32 rounded to nearest even (MXCSR default, as nearbyintf), clamped to ±127.
inline __m256i quantize8(const float* x, __m256 inverse) {
    __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), inverse));
    return _mm256_max_epi32(_mm256_min_epi32(q, _mm256_set1_epi32(127)), _mm256_set1_epi32(-127));
}

// One k-quad of one row against all 8 groups of the tile, into 8 sums. (As asm, like quad_2x4,
// it measured the same: the one-row kernels wait on memory, not on GCC's spills.)
inline void quad_1x8(const uint8_t* x, const int8_t* weights, __m256i ones, __m256i (&sum)[8]) {
    int32_t quad;
    __builtin_memcpy(&quad, x, 4);
    const __m256i x_signed = _mm256_set1_epi32(quad);
    const __m256i x_abs = _mm256_sign_epi8(x_signed, x_signed);
    for (int64_t g = 0; g < 8; ++g) {
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(weights + 32 * g));
        const __m256i pairs = _mm256_maddubs_epi16(x_abs, _mm256_sign_epi8(wv, x_signed));
        sum[g] = _mm256_add_epi32(sum[g], _mm256_madd_epi16(pairs, ones));
    }
}

// One k-quad of two rows against 4 groups of 8 outputs (32 of the tile's 64): per group one
// weight load shared by the rows, then per row vpsignb, vpmaddubsw, vpmaddwd (with ones) and
// vpaddd into the row's sum. One asm statement because GCC 12, given the same steps as
// intrinsics, keeps copies of the 8 sums on the stack (stores every quad, and reloads) though the
// 15 vectors of a step fit the 16 ymm registers (clang 16 does not). In place of the intrinsics
// (with the prefetch below), Zen 3, 2 threads, weights from DRAM, old and new alternating in one
// process (40 pairs, medians of the per-pair ratios): Qwen3-0.6B's qkv shape 1.35x at 8, 64 and
// 512 rows, 1.13x at 4, 1.0x at 2 and 3; the other projections 1.19-1.40x from 8 rows up.
inline void quad_2x4(const uint8_t* x0, const uint8_t* x1, const int8_t* weights, const __m256i& ones,
                     __m256i (&sum0)[4], __m256i (&sum1)[4]) {
    __m256i signed0, signed1, abs0, abs1, w, t0, t1;
    const auto* wv = reinterpret_cast<const __m256i*>(weights);
    // clang-format off
#define LMRUN_QUAD_GROUP(W, S0, S1)          \
    "vmovdqu " W ", %[w]\n\t"               \
    "vpsignb %[signed0], %[w], %[t0]\n\t"   \
    "vpsignb %[signed1], %[w], %[t1]\n\t"   \
    "vpmaddubsw %[t0], %[abs0], %[t0]\n\t"  \
    "vpmaddubsw %[t1], %[abs1], %[t1]\n\t"  \
    "vpmaddwd %[ones], %[t0], %[t0]\n\t"    \
    "vpmaddwd %[ones], %[t1], %[t1]\n\t"    \
    "vpaddd %[t0], " S0 ", " S0 "\n\t"      \
    "vpaddd %[t1], " S1 ", " S1 "\n\t"
    __asm__("vpbroadcastd %[x0], %[signed0]\n\t"
            "vpbroadcastd %[x1], %[signed1]\n\t"
            "vpsignb %[signed0], %[signed0], %[abs0]\n\t"
            "vpsignb %[signed1], %[signed1], %[abs1]\n\t"
            LMRUN_QUAD_GROUP("%[w0]", "%[s00]", "%[s10]")
            LMRUN_QUAD_GROUP("%[w1]", "%[s01]", "%[s11]")
            LMRUN_QUAD_GROUP("%[w2]", "%[s02]", "%[s12]")
            LMRUN_QUAD_GROUP("%[w3]", "%[s03]", "%[s13]")
            : [s00] "+x"(sum0[0]), [s01] "+x"(sum0[1]), [s02] "+x"(sum0[2]), [s03] "+x"(sum0[3]),
              [s10] "+x"(sum1[0]), [s11] "+x"(sum1[1]), [s12] "+x"(sum1[2]), [s13] "+x"(sum1[3]),
              [signed0] "=&x"(signed0), [signed1] "=&x"(signed1), [abs0] "=&x"(abs0), [abs1] "=&x"(abs1),
              [w] "=&x"(w), [t0] "=&x"(t0), [t1] "=&x"(t1)
            : [x0] "m"(*reinterpret_cast<const int32_t*>(x0)),
              [x1] "m"(*reinterpret_cast<const int32_t*>(x1)),
              [w0] "m"(wv[0]), [w1] "m"(wv[1]), [w2] "m"(wv[2]), [w3] "m"(wv[3]), [ones] "m"(ones));
#undef LMRUN_QUAD_GROUP
    // clang-format on
}

struct Int8Avx2 {
    static constexpr int64_t kCols = kTileOutputs;
    static constexpr int kMaxRows = 2;
    static constexpr bool kUnsignedX = false;
    static constexpr int64_t kMinCallsToPrefetch = 1;
    // Below one prefetched line per quad (8 rows and more: the calls over a chunk share its
    // lines), two_rows issues its share every kSparseStepGroup quads: working out each quad's
    // (usually empty) share cost 1.1-1.2x at 64-512 rows; at 2-4 rows every quad has lines, and
    // 4 quads' lines at once measured 0.94x there.
    static constexpr int64_t kSparseQuads = NextChunkPrefetch::kSparseStepGroup;
    static_assert(kInt8ChunkQuads % kSparseQuads == 0 &&
                  (kInt8InPadding / 4) % kSparseQuads == 0);  // every chunk's quad count

    // One row, all 8 groups of the tile: 8 sums, |x| and x, and a weight vector fit the registers.
    static void one_row(const int8_t* w, int64_t quads, const uint8_t* x, int32_t* acc,
                        NextChunkPrefetch prefetch) {
        __m256i sum[8];
        for (int64_t g = 0; g < 8; ++g)
            sum[g] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 8 * g));
        const __m256i ones = _mm256_set1_epi16(1);
        for (int64_t p = 0; p < quads; ++p) {
            prefetch.step(p);
            quad_1x8(x + 4 * p, w + p * kInt8QuadBytes, ones, sum);
        }
        for (int64_t g = 0; g < 8; ++g) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 8 * g), sum[g]);
    }

    // Two rows × groups [g0, g0 + 4) of the tile, the prefetch issued every N quads.
    template <int64_t N>
    static void two_rows(const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride, int32_t* acc,
                         int64_t g0, NextChunkPrefetch prefetch) {
        __m256i sum[2][4];
        for (int r = 0; r < 2; ++r)
            for (int64_t g = 0; g < 4; ++g)
                sum[r][g] = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(acc + r * kTileOutputs + 8 * (g0 + g)));
        const __m256i ones = _mm256_set1_epi16(1);
        for (int64_t p0 = 0; p0 < quads; p0 += N) {
            prefetch.step_range(p0, p0 + N);
            for (int64_t p = p0; p < p0 + N; ++p)
                quad_2x4(x + 4 * p, x + x_stride + 4 * p, w + p * kInt8QuadBytes + 32 * g0, ones, sum[0],
                         sum[1]);
        }
        for (int r = 0; r < 2; ++r)
            for (int64_t g = 0; g < 4; ++g)
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * kTileOutputs + 8 * (g0 + g)),
                                    sum[r][g]);
    }

    // One row walks the whole tile in one pass over the chunk; two rows in two passes of 32
    // outputs, each issuing half of the call's prefetches.
    static void run(int rows, const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride,
                    int32_t* acc, NextChunkPrefetch prefetch) {
        if (rows == 1) return one_row(w, quads, x, acc, prefetch);
        for (int64_t pass = 0; pass < 2; ++pass) {
            const NextChunkPrefetch share = prefetch.pass(pass, 2);
            if (share.sparse()) {
                two_rows<kSparseQuads>(w, quads, x, x_stride, acc, 4 * pass, share);
            } else {
                two_rows<1>(w, quads, x, x_stride, acc, 4 * pass, share);
            }
        }
    }
};

// One row (batch-1 decode): each tile's K is cut into kInt8OneRowStreams equal parts walked in
// lockstep into the same 8 sums, so a thread keeps that many sequential weight streams in flight
// without more accumulators (16 ymm registers hold no second tile's 8). No software prefetch:
// with the streams the hardware prefetcher keeps up, and prefetching ahead in each stream slowed
// it (standalone walk of 64 KiB tiles with this micro-kernel, 2 threads, Zen 3, 21 alternating
// rounds, medians: 1 stream 17.6 GB/s, 2 streams 21.8, 4 streams 20.0, 2 streams with a 1 KiB
// prefetch 19.6). In place of the chunked loop nest (one stream, next-chunk prefetch), Zen 3:
// kernel_bench 1.04-1.26x per Qwen3-0.6B projection (5 alternating rounds, the LM head 1.26x);
// `lmrun bench`, int8 weights, 10 alternating rounds, decode batch 1 at 128 tokens of context
// 1.14-1.22x (medians of two sets), at 1024 tokens 1.18-1.20x.
constexpr int kInt8OneRowStreams = 2;
// Every tile's quad count (padded_in / 4) splits into equal parts: one_row_tile has no tail loop.
static_assert((kInt8InPadding / 4) % kInt8OneRowStreams == 0);

void one_row_tile(const uint8_t* xq, const PackedLinear& w, int64_t tile, int32_t* sums) {
    const int8_t* weights = static_cast<const int8_t*>(w.data) + tile * w.tile_elements();
    const int64_t part = w.padded_in / 4 / kInt8OneRowStreams;  // quads per stream
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i sum[8];
    for (__m256i& s : sum) s = _mm256_setzero_si256();
    for (int64_t p = 0; p < part; ++p) {
        for (int s = 0; s < kInt8OneRowStreams; ++s) {
            const int64_t quad_index = s * part + p;
            quad_1x8(xq + 4 * quad_index, weights + quad_index * kInt8QuadBytes, ones, sum);
        }
    }
    for (int64_t g = 0; g < 8; ++g) _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + 8 * g), sum[g]);
}

void one_row_int8_avx2(const float* x, const PackedLinear& w, const float* bias, float* y) {
    uint8_t* xq = int8_x_buffer(size_t(w.padded_in));
    float* x_scale = int8_x_scale_buffer(1);
    quantize_rows_int8(x, 1, w.in_features, w.padded_in, /*unsigned_offset=*/false, xq, x_scale);
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        alignas(32) int32_t sums[kTileOutputs];
        for (int64_t t = begin; t < end; ++t) {
            one_row_tile(xq, w, t, sums);
            dequantize_tile<false>(sums, 1, x_scale, w, t, bias, y);
        }
    });
}

}  // namespace

void quantize_rows_int8(const float* x, int64_t num_rows, int64_t in_features, int64_t padded_in,
                        bool unsigned_offset, uint8_t* out, float* row_scales) {
    const uint8_t offset = unsigned_offset ? 0x80 : 0x00;  // q + 128 as a byte is q ^ 0x80
    const __m256i offset_bytes = _mm256_set1_epi8(char(offset));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t r = 0; r < num_rows; ++r) {
        const float* src = x + r * in_features;
        uint8_t* dst = out + r * padded_in;
        const float amax = row_abs_max_avx2(src, in_features);
        const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
        row_scales[r] = amax / 127.0f;
        const __m256 inv = _mm256_set1_ps(inverse);
        int64_t k = 0;
        for (; k + 32 <= in_features; k += 32) {
            // packs work within 128-bit lanes; the permute puts the 32 bytes back in k order.
            __m256i ab = _mm256_packs_epi32(quantize8(src + k, inv), quantize8(src + k + 8, inv));
            __m256i cd = _mm256_packs_epi32(quantize8(src + k + 16, inv), quantize8(src + k + 24, inv));
            __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), order);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), _mm256_xor_si256(bytes, offset_bytes));
        }
        for (; k < in_features; ++k) {
            float q = std::nearbyint(src[k] * inverse);
            q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
            dst[k] = uint8_t(int8_t(q)) ^ offset;
        }
        for (; k < padded_in; ++k) dst[k] = offset;
    }
}

void linear_int8_avx2(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    if (num_rows == 1) return one_row_int8_avx2(x, w, bias, y);
    int8_driver<Int8Avx2>(x, num_rows, w, bias, y);
}

}  // namespace lmrun::kernels
