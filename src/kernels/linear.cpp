#include "kernels/linear.h"

#include <sys/mman.h>

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

namespace lmrun::kernels {

struct LinearWeightState {
    PackedLinear packed;
    size_t nbytes = 0;
    std::unique_ptr<void, decltype(&std::free)> buffer{nullptr, &std::free};
    std::vector<float> scales;          // int8 only
    std::vector<int32_t> compensation;  // int8 only
    OnednnLinear onednn;
};

namespace {

constexpr int64_t kMaxOnednnRows = 512;

// One source row of W converted to F32 (the source may be F32, BF16 or F16).
void load_row_f32(const void* src, DType src_dtype, int64_t row, int64_t in_features, float* out) {
    size_t offset = size_t(row * in_features) * dtype_size_bytes(src_dtype);
    convert_to_f32(static_cast<const char*>(src) + offset, src_dtype, out, size_t(in_features));
}

// Large weights go on 2 MiB-aligned, huge-page-advised memory: the GEMV streams them at DRAM
// speed, and 4 KiB pages cost it ~30% in TLB misses (measured on the LM head).
void* allocate_weight_memory(size_t nbytes) {
    constexpr size_t kHugePage = size_t(2) << 20;
    if (nbytes < kHugePage) return std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
    size_t rounded = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = std::aligned_alloc(kHugePage, rounded);
    if (memory) madvise(memory, rounded, MADV_HUGEPAGE);  // advice only; failure is harmless
    return memory;
}

// One tile of BF16 weights straight from BF16 source rows (no conversion): element (lane, k) at
// pair k/2, slot k%2. Every element is written, padding as zero, in storage order.
void pack_tile_bf16_bits(const uint16_t* rows, int64_t count, const PackedLinear& w, uint16_t* tile) {
    const int64_t in = w.in_features;
    for (int64_t pair = 0; pair < w.padded_in / 2; ++pair) {
        uint16_t* out = tile + pair * kTileOutputs * 2;
        const int64_t k = 2 * pair;
        for (int64_t lane = 0; lane < kTileOutputs; ++lane) {
            const uint16_t* row = rows + lane * in;
            out[2 * lane] = lane < count && k < in ? row[k] : 0;
            out[2 * lane + 1] = lane < count && k + 1 < in ? row[k + 1] : 0;
        }
    }
}

// One tile from rows already converted to F32 ([count][in_features]), padding as zero.
template <typename T>
void pack_tile_f32_rows(const float* rows, int64_t count, const PackedLinear& w, T* tile) {
    const int64_t in = w.in_features;
    for (int64_t k = 0; k < w.padded_in; ++k) {
        for (int64_t lane = 0; lane < kTileOutputs; ++lane) {
            const float value = lane < count && k < in ? rows[lane * in + k] : 0.0f;
            if constexpr (sizeof(T) == 2) {
                // BF16 tiles hold k-pairs: (k, lane) at pair k/2, slot k%2.
                tile[(k / 2) * kTileOutputs * 2 + lane * 2 + (k % 2)] = f32_to_bf16(value);
            } else {
                tile[k * kTileOutputs + lane] = value;
            }
        }
    }
}

// Writes every element of every tile (padding included), so the buffer needs no memset, and each
// thread streams through whole tiles; BF16 to BF16 copies bits without converting.
template <typename T>
void pack_tiles(const void* src, DType src_dtype, const PackedLinear& w, T* dst) {
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        std::vector<float> rows;
        for (int64_t t = begin; t < end; ++t) {
            const int64_t first = t * kTileOutputs;
            const int64_t count = std::min(kTileOutputs, w.out_features - first);
            T* tile = dst + t * w.tile_elements();
            if constexpr (sizeof(T) == 2) {
                if (src_dtype == DType::BF16) {
                    pack_tile_bf16_bits(static_cast<const uint16_t*>(src) + first * w.in_features, count, w,
                                        tile);
                    continue;
                }
            }
            rows.resize(size_t(count * w.in_features));
            for (int64_t lane = 0; lane < count; ++lane)
                load_row_f32(src, src_dtype, first + lane, w.in_features, rows.data() + lane * w.in_features);
            pack_tile_f32_rows(rows.data(), count, w, tile);
        }
    });
}

// Places quantized rows into the int8 tiles and records each output's scale and compensation.
// quantize_row(n, q_row) fills q_row (in_features values) and returns row n's scale.
template <typename QuantizeRow>
void pack_int8_tiles(LinearWeightState& state, QuantizeRow&& quantize_row) {
    const PackedLinear& w = state.packed;
    auto* dst = static_cast<int8_t*>(state.buffer.get());
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        std::unique_ptr<int8_t[]> q(new int8_t[size_t(w.in_features)]);
        for (int64_t n = begin * kTileOutputs; n < std::min(end * kTileOutputs, w.out_features); ++n) {
            state.scales[n] = quantize_row(n, q.get());
            int32_t sum = 0;
            for (int64_t k = 0; k < w.in_features; ++k) {
                dst[packed_offset(w, n, k)] = q[k];
                sum += q[k];
            }
            state.compensation[n] = 128 * sum;
        }
    });
}

// The state of an empty weight of the given shape and storage: its buffer (zeroed for int8,
// whose packer writes only the rows), int8 scales and compensation.
std::shared_ptr<LinearWeightState> allocate_state(DType storage_dtype, int64_t out_features,
                                                  int64_t in_features) {
    LMRUN_CHECK(out_features > 0 && in_features > 0, "empty linear weight");
    auto state = std::make_shared<LinearWeightState>();
    PackedLinear& w = state->packed;
    w.dtype = storage_dtype;
    w.out_features = out_features;
    w.in_features = in_features;
    int64_t padding = in_padding(storage_dtype);
    w.padded_in = (in_features + padding - 1) / padding * padding;
    w.num_tiles = (out_features + kTileOutputs - 1) / kTileOutputs;
    state->nbytes = size_t(w.num_tiles * w.tile_elements()) * dtype_size_bytes(storage_dtype);
    state->buffer.reset(allocate_weight_memory(state->nbytes));
    LMRUN_CHECK(state->buffer != nullptr, "out of memory packing a linear weight");
    // pack_tiles writes every byte (padding lanes and padded k as zero); pack_int8_tiles writes
    // only the rows, so int8 padding is zeroed here (the kernels read it).
    if (storage_dtype == DType::I8) std::memset(state->buffer.get(), 0, state->nbytes);
    w.data = state->buffer.get();
    if (storage_dtype == DType::I8) {
        state->scales.assign(size_t(w.num_tiles * kTileOutputs), 0.0f);
        state->compensation.assign(size_t(w.num_tiles * kTileOutputs), 0);
        w.scales = state->scales.data();
        w.compensation = state->compensation.data();
        state->nbytes += size_t(w.num_tiles * kTileOutputs) * (sizeof(float) + sizeof(int32_t));
    }
    return state;
}

}  // namespace

LinearWeight LinearWeight::pack_int8(const int8_t* q, const float* scales, int64_t out_features,
                                     int64_t in_features) {
    LinearWeight weight;
    weight.state_ = allocate_state(DType::I8, out_features, in_features);
    pack_int8_tiles(*weight.state_, [&](int64_t n, int8_t* row) {
        for (int64_t k = 0; k < in_features; ++k) {
            int8_t value = q[n * in_features + k];
            row[k] = value < -127 ? int8_t(-127) : value;
        }
        return scales[n];
    });
    return weight;
}

LinearWeight LinearWeight::pack(const void* src, DType src_dtype, int64_t out_features, int64_t in_features,
                                DType storage_dtype) {
    LMRUN_CHECK(storage_dtype == DType::F32 || storage_dtype == DType::BF16 || storage_dtype == DType::I8,
                "linear weights are stored as F32, BF16 or I8");
    LMRUN_CHECK(src_dtype == DType::F32 || src_dtype == DType::BF16 || src_dtype == DType::F16,
                "linear weights come as F32, BF16 or F16");
    LinearWeight weight;
    weight.state_ = allocate_state(storage_dtype, out_features, in_features);
    LinearWeightState& state = *weight.state_;
    const PackedLinear& w = state.packed;
    if (storage_dtype == DType::I8) {
        pack_int8_tiles(state, [&](int64_t n, int8_t* row) {
            thread_local std::vector<float> values;
            values.resize(size_t(in_features));
            load_row_f32(src, src_dtype, n, in_features, values.data());
            return quantize_row_int8_reference(values.data(), in_features, row);
        });
    } else if (storage_dtype == DType::BF16) {
        pack_tiles(src, src_dtype, w, static_cast<uint16_t*>(state.buffer.get()));
    } else {
        pack_tiles(src, src_dtype, w, static_cast<float*>(state.buffer.get()));
    }
    return weight;
}

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

uint16_t* gemm_bf16_x_buffer(size_t count) {
    thread_local std::vector<uint16_t> buffer;
    if (buffer.size() < count) buffer.resize(count);
    return buffer.data();
}

uint8_t* int8_x_buffer(size_t count) {
    thread_local std::vector<uint8_t> buffer;
    if (buffer.size() < count) buffer.resize(count);
    return buffer.data();
}
float* int8_x_scale_buffer(size_t count) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < count) buffer.resize(count);
    return buffer.data();
}
int32_t* int8_sum_buffer(size_t count) {
    thread_local std::vector<int32_t> buffer;
    if (buffer.size() < count) buffer.resize(count);
    return buffer.data();
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
