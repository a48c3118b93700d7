// AVX-512 int8 micro-kernels (arithmetic in linear_int8.h), in the loop nest of
// linear_int8_driver.h:
//  - VNNI: vpdpbusd(acc, q_x + 128, q_w) sums four byte products into each int32 lane, one
//    instruction per 64 multiply-adds; compensation removes the +128. Up to 6 rows × 64 outputs
//    (24 accumulators) per call, so each weight vector loaded feeds 6 instructions. From 20 rows
//    on, its own loop nest with the sums in registers over the whole K (vnni_whole_k).
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
#include "kernels/linear_store_avx512.h"

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

// sum[r][j] += Σ over `quads` k-quads p of x[r] quad p · w's 16 lanes j (the micro-kernel of
// both VNNI loop nests); step(p) runs first at every quad (their prefetches).
template <int R, typename Step>
inline void add_quads(__m512i (&sum)[R][4], const int8_t* w, int64_t quads, const uint8_t* x,
                      int64_t x_stride, Step&& step) {
    for (int64_t p = 0; p < quads; ++p) {
        const int8_t* wp = w + p * kInt8QuadBytes;
        step(p);
        __m512i wv[4];
        for (int64_t j = 0; j < 4; ++j) wv[j] = _mm512_loadu_si512(wp + 64 * j);
        for (int r = 0; r < R; ++r) {
            const __m512i xr = broadcast_quad(x + r * x_stride + 4 * p);
            for (int64_t j = 0; j < 4; ++j) sum[r][j] = dpbusd(sum[r][j], xr, wv[j]);
        }
    }
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
        add_quads<R>(sum, w, quads, x, x_stride, [&](int64_t p) { prefetch.step(p); });
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

// Many rows, the BF16 GEMM's loop nest (linear_gemm_bf16_avx512.cpp): a thread walks whole
// tiles, and each row block runs the tile's whole K with its 4R sums in registers, reading the
// tile from L2 (K/4 quads × 256 B: 64-192 KiB here), then dequantizes them straight to y (the
// vector form of dequantize_tile). The passes prefetch the thread's next tile into L2. Replaces,
// from kWholeKMinRows rows, the chunked loop nest (linear_int8_driver.h), whose sums went through
// a buffer at every 16 KiB chunk and whose chunk, x slice and sums (16 KiB each at 64 rows)
// overflowed a 48 KiB L1. Zen 5, kernel_bench, 2-3 alternating rounds: 1265-1620 → 1440-1830
// GOP/s at 20-64 rows (vpdpbusd alone: ~2080), 5-35% more at 128-512; at 8-18 rows, where the
// weights stream from DRAM, the chunked nest was as fast or faster (18 rows: 1330-1440 against
// 1005-1255), so it stays there.
constexpr int64_t kWholeKMinRows = 20;

template <int R>
void vnni_whole_k(const int8_t* tile, int64_t quads, const uint8_t* x, int64_t x_stride,
                  const float* x_scales, const float* w_scales, const int32_t* compensation,
                  const float* bias, int64_t count, float* y, int64_t y_stride, NextTilePrefetch& prefetch) {
    __m512i sum[R][4];
    for (int r = 0; r < R; ++r)
        for (int64_t j = 0; j < 4; ++j) sum[r][j] = _mm512_setzero_si512();
    add_quads<R>(sum, tile, quads, x, x_stride, [&](int64_t) { prefetch.step(); });
    // Lanes past `count` (a last, partial tile) hold zero weights; their scales are not read.
    const __mmask16 full = 0xffff;
    __m512 scale[4];
    __m512i comp[4];
    for (int64_t j = 0; j < 4; ++j) {
        const int64_t left = count - 16 * j;
        const __mmask16 mask = left >= 16 ? full : left > 0 ? __mmask16((1u << left) - 1) : __mmask16(0);
        scale[j] = _mm512_maskz_loadu_ps(mask, w_scales + 16 * j);
        comp[j] = _mm512_maskz_loadu_epi32(mask, compensation + 16 * j);
    }
    for (int r = 0; r < R; ++r) {
        const __m512 xs = _mm512_set1_ps(x_scales[r]);
        __m512 out[4];
        for (int64_t j = 0; j < 4; ++j) {
            const __m512 value = _mm512_cvtepi32_ps(_mm512_sub_epi32(sum[r][j], comp[j]));
            out[j] = _mm512_mul_ps(value, _mm512_mul_ps(xs, scale[j]));
        }
        store_tile_outputs(out, count, bias, y + r * y_stride);
    }
}

void vnni_whole_k_rows(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    uint8_t* xq = int8_x_buffer(size_t(num_rows * w.padded_in));
    float* x_scales = int8_x_scale_buffer(size_t(num_rows));
    const auto* data = static_cast<const int8_t*>(w.data);
    const int64_t quads = w.padded_in / 4;
    const int64_t tile_bytes = w.tile_elements();
    const RowBlocks blocks(num_rows, Int8Vnni::kMaxRows);
    const int64_t steps = blocks.count * quads;
    const auto quantize_rows = [&](int64_t begin, int64_t end) {
        quantize_rows_int8(x + begin * w.in_features, end - begin, w.in_features, w.padded_in,
                           /*unsigned_offset=*/true, xq + begin * w.padded_in, x_scales + begin);
    };
    parallel_for_after(num_rows, quantize_rows, w.num_tiles, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            const int8_t* tile = data + t * w.tile_elements();
            NextTilePrefetch prefetch(t + 1 < end ? tile + w.tile_elements() : nullptr, tile_bytes, steps);
            const int64_t n0 = t * kTileOutputs;
            const int64_t count = int8_min(kTileOutputs, w.out_features - n0);
            for (int64_t b = 0; b < blocks.count; ++b) {
                const int64_t r = blocks.first_row(b);
                dispatch_constant<1, 2, 3, 4, 5, 6>(blocks.rows(b), [&](auto rows) {
                    vnni_whole_k<decltype(rows)::value>(
                        tile, quads, xq + r * w.padded_in, w.padded_in, x_scales + r, w.scales + n0,
                        w.compensation + n0, bias ? bias + n0 : nullptr, count, y + r * w.out_features + n0,
                        w.out_features, prefetch);
                });
            }
        }
    });
}

}  // namespace

void linear_int8_vnni(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    if (num_rows == 1) return one_row_vnni(x, w, bias, y);
    if (num_rows >= kWholeKMinRows) return vnni_whole_k_rows(x, num_rows, w, bias, y);
    int8_driver<Int8Vnni>(x, num_rows, w, bias, y);
}

void linear_int8_avx512(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                        float* y) {
    int8_driver<Int8Avx512>(x, num_rows, w, bias, y);
}

}  // namespace lmrun::kernels
