#include "kernels/linear.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/check.h"
#include "core/cpu_features.h"
#include "core/parallel.h"
#include "kernels/linear_gemv.h"
#include "kernels/linear_int8.h"
#include "kernels/linear_onednn.h"
#include "kernels/linear_weight_builder.h"
#include "kernels/linear_weight_state.h"
#include "kernels/thread_buffer.h"

namespace lmrun::kernels {

LinearWeight LinearWeight::pack(const void* src, DType src_dtype, int64_t out_features, int64_t in_features,
                                DType storage_dtype) {
    LinearWeightBuilder builder(out_features, in_features, storage_dtype);
    const size_t row_bytes = size_t(in_features) * dtype_size_bytes(src_dtype);
    builder.pack_rows(0, WeightRows{src, src_dtype, out_features, row_bytes});
    return builder.finish();
}

LinearWeight LinearWeight::pack_int8(const int8_t* q, const float* scales, int64_t out_features,
                                     int64_t in_features) {
    LinearWeightBuilder builder(out_features, in_features, DType::I8, WeightRowSource::Int8);
    builder.pack_rows(0, WeightRows{q, DType::I8, out_features, size_t(in_features)});
    builder.set_scales(0, scales, out_features);
    return builder.finish();
}

size_t LinearWeight::packed_nbytes(int64_t out_features, int64_t in_features, DType storage_dtype) {
    return packed_layout(out_features, in_features, storage_dtype).tiles_nbytes();
}

LinearWeight LinearWeight::borrow_packed(const void* data, std::shared_ptr<const void> owner,
                                         int64_t out_features, int64_t in_features, DType storage_dtype,
                                         const float* scales, const int32_t* compensation) {
    auto state = std::make_shared<LinearWeightState>();
    state->packed = packed_layout(out_features, in_features, storage_dtype);
    PackedLinear& w = state->packed;
    w.data = data;
    state->nbytes = w.tiles_nbytes();
    state->borrowed = std::move(owner);
    if (storage_dtype == DType::I8) {
        const size_t outputs = w.padded_outputs();
        state->scales.assign(scales, scales + outputs);
        state->compensation.assign(compensation, compensation + outputs);
        w.scales = state->scales.data();
        w.compensation = state->compensation.data();
        state->nbytes += outputs * (sizeof(float) + sizeof(int32_t));
    }
    return LinearWeight(std::move(state));
}

namespace {

constexpr int64_t kMaxOnednnRows = 512;

}  // namespace

int64_t LinearWeight::out_features() const {
    return state_ ? state_->packed.out_features : 0;
}
int64_t LinearWeight::in_features() const {
    return state_ ? state_->packed.in_features : 0;
}
DType LinearWeight::storage_dtype() const {
    return state_ ? state_->packed.dtype : DType::F32;
}
size_t LinearWeight::nbytes() const {
    return state_ ? state_->nbytes : 0;
}
const PackedLinear& LinearWeight::packed() const {
    return state_->packed;
}

namespace {

// Our AVX512_BF16 GEMM matches or beats oneDNN's avx512_core_bf16 kernels up to a few hundred
// rows (kernel_bench), and never allocates. Where AMX exists, our AMX GEMM takes its place in
// linear_allocation_free() (oneDNN allocates per call); linear() leaves those rows to oneDNN.
bool bf16_gemm_applies(const PackedLinear& w, int64_t num_rows) {
    return w.dtype == DType::BF16 && num_rows > kGemvMaxRows && kernel_isa() >= Isa::Avx512Bf16;
}

// int8 weights: AMX tiles for many rows, else vpdpbusd, else the sign trick (AVX-512BW or
// AVX2). Every path is allocation-free once warmed up.
void linear_int8(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    const Isa isa = kernel_isa();
    if (isa == Isa::AmxBf16 && num_rows > kGemvMaxRows) return linear_int8_amx(x, num_rows, w, bias, y);
    if (isa >= Isa::Avx512Vnni) return linear_int8_vnni(x, num_rows, w, bias, y);
    if (isa >= Isa::Avx512) return linear_int8_avx512(x, num_rows, w, bias, y);
    linear_int8_avx2(x, num_rows, w, bias, y);
}

}  // namespace

struct GemmBf16X;
struct Int8X;
struct Int8XScales;
struct Int8Sums;
uint16_t* gemm_bf16_x_buffer(size_t count) {
    return thread_buffer<GemmBf16X, uint16_t>(count).data();
}
uint8_t* int8_x_buffer(size_t count) {
    return thread_buffer<Int8X, uint8_t>(count).data();
}
float* int8_x_scale_buffer(size_t count) {
    return thread_buffer<Int8XScales, float>(count).data();
}
int32_t* int8_sum_buffer(size_t count) {
    return thread_buffer<Int8Sums, int32_t>(count).data();
}

void reserve_linear_workspace(const LinearWeight& weight, int64_t max_rows) {
    const PackedLinear& w = weight.packed();
    // The AMX BF16 GEMM pads its rows to 32 (linear_gemm_amx.cpp).
    if (bf16_gemm_applies(w, max_rows))
        gemm_bf16_x_buffer(size_t((max_rows + kInt8AmxRowPadding - 1) / kInt8AmxRowPadding *
                                  kInt8AmxRowPadding * w.padded_in));
    if (w.dtype == DType::I8 && max_rows > 0) {
        const int64_t padded_rows =
            (max_rows + kInt8AmxRowPadding - 1) / kInt8AmxRowPadding * kInt8AmxRowPadding;
        int8_x_buffer(size_t(padded_rows * w.padded_in));
        int8_x_scale_buffer(size_t(max_rows));
        const size_t sums = size_t(max_rows * kTileOutputs);
#pragma omp parallel
        int8_sum_buffer(sums);
    }
}

void linear_allocation_free(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                            float* y) {
    if (num_rows <= 0) return;
    const PackedLinear& w = weight.packed();
    if (w.dtype == DType::I8) return linear_int8(x, num_rows, w, bias, y);
    if (bf16_gemm_applies(w, num_rows)) {
        if (kernel_isa() == Isa::AmxBf16) return linear_gemm_bf16_amx(x, num_rows, w, bias, y);
        return linear_gemm_bf16_avx512(x, num_rows, w, bias, y);
    }
    if (kernel_isa() == Isa::Avx2 && num_rows >= kAvx2GemmMinRows)
        return linear_gemm_avx2(x, num_rows, w, bias, y);
    auto gemv = kernel_isa() >= Isa::Avx512 ? linear_gemv_avx512 : linear_gemv_avx2;
    gemv(x, num_rows, w, bias, y);
}

void linear(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias, float* y) {
    if (num_rows <= 0) return;
    const PackedLinear& w = weight.packed();
    if (w.dtype == DType::I8) return linear_int8(x, num_rows, w, bias, y);
    auto gemv = kernel_isa() >= Isa::Avx512 ? linear_gemv_avx512 : linear_gemv_avx2;
    if (num_rows <= kGemvMaxRows) return gemv(x, num_rows, w, bias, y);
    if (bf16_gemm_applies(w, num_rows) && kernel_isa() != Isa::AmxBf16 && num_rows <= kMaxOnednnRows) {
        return linear_gemm_bf16_avx512(x, num_rows, w, bias, y);
    }
    // oneDNN has no BF16 kernel on AVX2 (its F32 GEMM serves F32 weights there).
    if (kernel_isa() == Isa::Avx2 && w.dtype == DType::BF16 && num_rows >= kAvx2GemmMinRows)
        return linear_gemm_avx2(x, num_rows, w, bias, y);
    // oneDNN primitives are compiled per row count, so prefill lengths are split into
    // power-of-two pieces (8..kMaxOnednnRows) plus a remainder: at most ~10 cached primitives
    // per weight whatever the prompt lengths, instead of one per distinct length.
    for (int64_t row = 0; row < num_rows;) {
        int64_t left = num_rows - row;
        int64_t piece = left;
        if (left >= 8) {
            piece = 8;
            while (piece * 2 <= left && piece * 2 <= kMaxOnednnRows) piece *= 2;
        }
        const float* xs = x + row * w.in_features;
        float* ys = y + row * w.out_features;
        if (piece <= kGemvMaxRows || !linear_onednn(xs, piece, weight, bias, ys)) {
            gemv(xs, piece, w, bias, ys);
        }
        row += piece;
    }
}

bool linear_onednn(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                   float* y) {
    return weight.state().onednn.run(x, num_rows, weight.packed(), bias, y);
}

namespace {

void linear_int8_reference(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias,
                           float* y) {
    std::vector<int8_t> q(size_t(w.in_features));
    const auto* data = static_cast<const int8_t*>(w.data);
    for (int64_t r = 0; r < num_rows; ++r) {
        const float x_scale = quantize_row_int8_reference(x + r * w.in_features, w.in_features, q.data());
        for (int64_t n = 0; n < w.out_features; ++n) {
            int64_t sum = 0;
            for (int64_t k = 0; k < w.in_features; ++k) sum += int64_t(q[k]) * data[packed_offset(w, n, k)];
            y[r * w.out_features + n] = float(sum) * (x_scale * w.scales[n]) + (bias ? bias[n] : 0.0f);
        }
    }
}

}  // namespace

void linear_reference(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                      float* y) {
    const PackedLinear& w = weight.packed();
    if (w.dtype == DType::I8) return linear_int8_reference(x, num_rows, w, bias, y);
    for (int64_t r = 0; r < num_rows; ++r) {
        for (int64_t n = 0; n < w.out_features; ++n) {
            double sum = bias ? bias[n] : 0.0;
            for (int64_t k = 0; k < w.in_features; ++k) {
                int64_t offset = packed_offset(w, n, k);
                double wv = w.dtype == DType::BF16 ? bf16_to_f32(static_cast<const uint16_t*>(w.data)[offset])
                                                   : static_cast<const float*>(w.data)[offset];
                sum += wv * x[r * w.in_features + k];
            }
            y[r * w.out_features + n] = float(sum);
        }
    }
}

}  // namespace lmrun::kernels
