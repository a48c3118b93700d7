// AVX-512 int8 micro-kernels (arithmetic in linear_int8.h), in the loop nest of
// linear_int8_driver.h:
//  - VNNI: vpdpbusd(acc, q_x + 128, q_w) sums four byte products into each int32 lane, one
//    instruction per 64 multiply-adds; compensation removes the +128. Up to 6 rows × 64 outputs
//    (24 accumulators) per call, so each weight vector loaded feeds 6 instructions.
//  - AVX-512BW without VNNI: the AVX2 sign trick on 64-byte vectors (AVX-512 has no vpsignb:
//    a masked subtract negates the weight bytes where x is negative).
// One row (batch-1 decode) skips the loop nest: the VNNI kernel walks 4 tiles in lockstep, 4
// weight streams per thread (one_row_vnni).
// The VNNI kernel prefetches the next chunk only where the chunk is walked in 2 or more calls
// (7+ rows): on Sapphire Rapids, int8 decode at batch 1-8 read weights at 80-97% of the bandwidth
// without it, and there the prefetches changed nothing measurable (lmrun bench, medians of 3
// alternating rounds: 0.92-1.12x); on Zen 5 they are mixed at 2-4 rows and gain from 7 (Int8Vnni).
// The AVX-512BW kernel issues none.

#include "kernels/avx512_intrinsics.h"

#include "kernels/dispatch_constant.h"
#include "kernels/linear_int8.h"
#include "kernels/linear_int8_driver.h"

namespace lmrun::kernels {
namespace {

inline __m512i broadcast_quad(const uint8_t* x) {
    int32_t quad;
    __builtin_memcpy(&quad, x, 4);
    return _mm512_set1_epi32(quad);
}

// acc + Σ of 4 byte products per lane. gcc 12 does not tie _mm512_dpbusd_epi32's accumulator to
// its output register in a loop of many sums: it copied each sum into a scratch register, ran
// vpdpbusd there, copied it back and stored it to the stack, on every step (Zen 5, 6 rows: 270
// GOP/s per core against 830 for the instruction alone). The asm ties them.
inline __m512i dpbusd(__m512i acc, __m512i x, __m512i w) {
    asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
    return acc;
}

inline __m512i* acc_vec(int32_t* acc, int64_t r, int64_t j) {
    return reinterpret_cast<__m512i*>(acc + r * kTileOutputs + 16 * j);
}

struct Int8Vnni {
    static constexpr int64_t kCols = 64;
    static constexpr int kMaxRows = 6;
    static constexpr bool kUnsignedX = true;
    // Zen 5, kernel_bench, alternating rounds: the prefetch gains 3-17% at 16-64 rows, 0.93-1.11x
    // at 7-8 rows and 1.03-1.30x at 10-12 (2 calls per chunk; 7 rounds). At 2-4 rows (one call)
    // it measured 0.86-1.12x: off there, as on Sapphire Rapids, where it changed nothing at 1-8
    // rows. (Batch 1 has its own kernel, one_row_vnni.) Prefetching two chunks ahead instead of
    // one was 5-17% slower at 8-64 rows; walking two tiles' chunks in turn (two streams per
    // thread, as one_row_vnni does at one row) was slower at 4-64 rows.
    static constexpr int64_t kMinCallsToPrefetch = 2;

    template <int R>
    static void run_rows(const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride, int32_t* acc,
                         NextChunkPrefetch prefetch) {
        __m512i sum[R][4];
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) sum[r][j] = _mm512_loadu_si512(acc_vec(acc, r, j));
        for (int64_t p = 0; p < quads; ++p) {
            const int8_t* wp = w + p * kInt8QuadBytes;
            prefetch.step(p);
            __m512i wv[4];
            for (int64_t j = 0; j < 4; ++j) wv[j] = _mm512_loadu_si512(wp + 64 * j);
            for (int r = 0; r < R; ++r) {
                const __m512i xr = broadcast_quad(x + r * x_stride + 4 * p);
                for (int64_t j = 0; j < 4; ++j) sum[r][j] = dpbusd(sum[r][j], xr, wv[j]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) _mm512_storeu_si512(acc_vec(acc, r, j), sum[r][j]);
    }

    static void run(int rows, const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride,
                    int32_t* acc, NextChunkPrefetch prefetch) {
        switch (rows) {
            case 1:
                return run_rows<1>(w, quads, x, x_stride, acc, prefetch);
            case 2:
                return run_rows<2>(w, quads, x, x_stride, acc, prefetch);
            case 3:
                return run_rows<3>(w, quads, x, x_stride, acc, prefetch);
            case 4:
                return run_rows<4>(w, quads, x, x_stride, acc, prefetch);
            case 5:
                return run_rows<5>(w, quads, x, x_stride, acc, prefetch);
            default:
                return run_rows<6>(w, quads, x, x_stride, acc, prefetch);
        }
    }
};

struct Int8Avx512 {
    static constexpr int64_t kCols = 64;
    static constexpr int kMaxRows = 4;
    static constexpr bool kUnsignedX = false;
    static constexpr int64_t kMinCallsToPrefetch = 1;  // unused: run() issues no prefetch

    template <int R>
    static void run_rows(const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride, int32_t* acc) {
        __m512i sum[R][4];
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) sum[r][j] = _mm512_loadu_si512(acc_vec(acc, r, j));
        const __m512i ones = _mm512_set1_epi16(1);
        const __m512i zero = _mm512_setzero_si512();
        for (int64_t p = 0; p < quads; ++p) {
            __m512i x_abs[R];
            __mmask64 negative[R];
            for (int r = 0; r < R; ++r) {
                const __m512i xs = broadcast_quad(x + r * x_stride + 4 * p);
                negative[r] = _mm512_movepi8_mask(xs);
                x_abs[r] = _mm512_abs_epi8(xs);
            }
            const int8_t* wp = w + p * kInt8QuadBytes;
            for (int64_t j = 0; j < 4; ++j) {
                const __m512i wv = _mm512_loadu_si512(wp + 64 * j);
                for (int r = 0; r < R; ++r) {
                    const __m512i signed_w = _mm512_mask_sub_epi8(wv, negative[r], zero, wv);
                    const __m512i pairs = _mm512_maddubs_epi16(x_abs[r], signed_w);
                    sum[r][j] = _mm512_add_epi32(sum[r][j], _mm512_madd_epi16(pairs, ones));
                }
            }
        }
        for (int r = 0; r < R; ++r)
            for (int64_t j = 0; j < 4; ++j) _mm512_storeu_si512(acc_vec(acc, r, j), sum[r][j]);
    }

    static void run(int rows, const int8_t* w, int64_t quads, const uint8_t* x, int64_t x_stride,
                    int32_t* acc, NextChunkPrefetch /*prefetch*/) {
        switch (rows) {
            case 1:
                return run_rows<1>(w, quads, x, x_stride, acc);
            case 2:
                return run_rows<2>(w, quads, x, x_stride, acc);
            case 3:
                return run_rows<3>(w, quads, x, x_stride, acc);
            default:
                return run_rows<4>(w, quads, x, x_stride, acc);
        }
    }
};

// One row (batch-1 decode): S tiles walked in lockstep, so that each thread keeps S sequential
// weight streams in flight, as the BF16 one-row GEMV does (linear_gemv_avx512.cpp): one stream per
// thread read the weights at 35-46 GB/s of ~70 (Zen 5, kernel_bench).
constexpr int kOneRowStreams = 4;

template <int S>
void one_row_vnni_tiles(const uint8_t* xq, float x_scale, const PackedLinear& w, int64_t first_tile,
                        const float* bias, float* y) {
    const int8_t* tile0 = static_cast<const int8_t*>(w.data) + first_tile * w.tile_elements();
    const int64_t quads = w.padded_in / 4;
    __m512i sum[S][4];
    for (int s = 0; s < S; ++s)
        for (int64_t j = 0; j < 4; ++j) sum[s][j] = _mm512_setzero_si512();
    for (int64_t p = 0; p < quads; ++p) {
        const __m512i xp = broadcast_quad(xq + 4 * p);
        for (int s = 0; s < S; ++s) {
            const int8_t* wp = tile0 + s * w.tile_elements() + p * kInt8QuadBytes;
            for (int64_t j = 0; j < 4; ++j)
                sum[s][j] = dpbusd(sum[s][j], xp, _mm512_loadu_si512(wp + 64 * j));
        }
    }
    for (int s = 0; s < S; ++s) {
        alignas(64) int32_t sums[kTileOutputs];
        for (int64_t j = 0; j < 4; ++j) _mm512_store_si512(sums + 16 * j, sum[s][j]);
        dequantize_tile<true>(sums, 1, &x_scale, w, first_tile + s, bias, y);
    }
}

void one_row_vnni(const float* x, const PackedLinear& w, const float* bias, float* y) {
    uint8_t* xq = int8_x_buffer(size_t(w.padded_in));
    float* x_scale = int8_x_scale_buffer(1);
    quantize_rows_int8(x, 1, w.in_features, w.padded_in, /*unsigned_offset=*/true, xq, x_scale);
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; t += kOneRowStreams) {
            const int64_t streams = int8_min(kOneRowStreams, end - t);
            dispatch_constant<1, 2, 3, 4>(streams, [&](auto s) {
                one_row_vnni_tiles<decltype(s)::value>(xq, *x_scale, w, t, bias, y);
            });
        }
    });
}

}  // namespace

void linear_int8_vnni(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    if (num_rows == 1) return one_row_vnni(x, w, bias, y);
    int8_driver<Int8Vnni>(x, num_rows, w, bias, y);
}

void linear_int8_avx512(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                        float* y) {
    int8_driver<Int8Avx512>(x, num_rows, w, bias, y);
}

}  // namespace lmrun::kernels
