// AVX2 int8 kernels (arithmetic in linear_int8.h): the per-row activation quantizer every int8
// path uses, and the sign-trick micro-kernel: vpmaddubsw(|q_x|, q_w · sign(q_x)) gives int16
// pair sums that cannot saturate (|q| ≤ 127), vpmaddwd with ones widens them to int32. A call
// covers the tile's 64 outputs: one row in one pass over the chunk (8 accumulators), two rows in
// two passes of 32 (16 ymm registers hold no more), prefetching the next chunk as it goes. A
// call of one row (batch-1 decode) has its own kernel: two weight streams per tile (below).
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

struct Int8Avx2 {
    static constexpr int64_t kCols = kTileOutputs;
    static constexpr int kMaxRows = 2;
    static constexpr bool kUnsignedX = false;
    static constexpr int64_t kMinCallsToPrefetch = 1;

    // R rows × G groups of 8 outputs, starting at group g0 of the tile.
    template <int R, int G>
    static void block(const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride, int32_t* acc,
                      int64_t g0, NextChunkPrefetch prefetch) {
        __m256i sum[R][G];
        for (int r = 0; r < R; ++r)
            for (int64_t g = 0; g < G; ++g)
                sum[r][g] = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(acc + r * kTileOutputs + 8 * (g0 + g)));
        const __m256i ones = _mm256_set1_epi16(1);
        for (int64_t p = 0; p < quads; ++p) {
            prefetch.step(p);
            __m256i x_signed[R], x_abs[R];
            for (int r = 0; r < R; ++r) {
                int32_t quad;
                __builtin_memcpy(&quad, x + r * x_stride + 4 * p, 4);
                x_signed[r] = _mm256_set1_epi32(quad);
                x_abs[r] = _mm256_sign_epi8(x_signed[r], x_signed[r]);
            }
            const int8_t* wp = w + p * kInt8QuadBytes + 32 * g0;
            for (int64_t g = 0; g < G; ++g) {
                const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 32 * g));
                for (int r = 0; r < R; ++r) {
                    const __m256i pairs = _mm256_maddubs_epi16(x_abs[r], _mm256_sign_epi8(wv, x_signed[r]));
                    sum[r][g] = _mm256_add_epi32(sum[r][g], _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t g = 0; g < G; ++g)
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * kTileOutputs + 8 * (g0 + g)),
                                    sum[r][g]);
    }

    // One row walks the whole tile in one pass over the chunk (8 accumulators); two rows in two
    // passes of 32 outputs, each issuing half of the call's prefetches.
    static void run(int rows, const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride,
                    int32_t* acc, NextChunkPrefetch prefetch) {
        if (rows == 1) return block<1, 8>(w, quads, x, x_stride, acc, 0, prefetch);
        block<2, 4>(w, quads, x, x_stride, acc, 0, prefetch.pass(0, 2));
        block<2, 4>(w, quads, x, x_stride, acc, 4, prefetch.pass(1, 2));
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
            int32_t quad;
            __builtin_memcpy(&quad, xq + 4 * quad_index, 4);
            const __m256i x_signed = _mm256_set1_epi32(quad);
            const __m256i x_abs = _mm256_sign_epi8(x_signed, x_signed);
            const int8_t* wp = weights + quad_index * kInt8QuadBytes;
            for (int64_t g = 0; g < 8; ++g) {
                const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 32 * g));
                const __m256i pairs = _mm256_maddubs_epi16(x_abs, _mm256_sign_epi8(wv, x_signed));
                sum[g] = _mm256_add_epi32(sum[g], _mm256_madd_epi16(pairs, ones));
            }
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
