#include "kernels/linear.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/check.h"
#include "core/cpu_features.h"
#include "core/parallel.h"
#include "kernels/linear_gemv.h"
#include "kernels/linear_onednn.h"

namespace lmrun::kernels {

struct LinearWeightState {
    PackedLinear packed;
    size_t nbytes = 0;
    std::unique_ptr<void, decltype(&std::free)> buffer{nullptr, &std::free};
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

template <typename T>
void pack_tiles(const void* src, DType src_dtype, const PackedLinear& w, T* dst) {
    parallel_for(w.num_tiles, [&](int64_t begin, int64_t end) {
        std::unique_ptr<float[]> row(new float[size_t(w.in_features)]);
        for (int64_t n = begin * kTileOutputs; n < std::min(end * kTileOutputs, w.out_features); ++n) {
            load_row_f32(src, src_dtype, n, w.in_features, row.get());
            for (int64_t k = 0; k < w.in_features; ++k) {
                if constexpr (sizeof(T) == 2) {
                    dst[packed_offset(w, n, k)] = f32_to_bf16(row[k]);
                } else {
                    dst[packed_offset(w, n, k)] = row[k];
                }
            }
        }
    });
}

}  // namespace

LinearWeight LinearWeight::pack(const void* src, DType src_dtype, int64_t out_features, int64_t in_features,
                                DType storage_dtype) {
    LMRUN_CHECK(storage_dtype == DType::F32 || storage_dtype == DType::BF16,
                "linear weights are stored as F32 or BF16");
    LMRUN_CHECK(src_dtype == DType::F32 || src_dtype == DType::BF16 || src_dtype == DType::F16,
                "linear weights come as F32, BF16 or F16");
    LMRUN_CHECK(out_features > 0 && in_features > 0, "empty linear weight");
    LinearWeight weight;
    weight.state_ = std::make_shared<LinearWeightState>();
    LinearWeightState& state = *weight.state_;
    PackedLinear& w = state.packed;
    w.dtype = storage_dtype;
    w.out_features = out_features;
    w.in_features = in_features;
    int64_t padding = in_padding(storage_dtype);
    w.padded_in = (in_features + padding - 1) / padding * padding;
    w.num_tiles = (out_features + kTileOutputs - 1) / kTileOutputs;
    state.nbytes = size_t(w.num_tiles * w.tile_elements()) * dtype_size_bytes(storage_dtype);
    // Padding lanes and padded k stay zero: the kernels read them.
    state.buffer.reset(allocate_weight_memory(state.nbytes));
    LMRUN_CHECK(state.buffer != nullptr, "out of memory packing a linear weight");
    std::memset(state.buffer.get(), 0, state.nbytes);
    w.data = state.buffer.get();
    if (storage_dtype == DType::BF16) {
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

}  // namespace

void linear_allocation_free(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                            float* y) {
    if (num_rows <= 0) return;
    const PackedLinear& w = weight.packed();
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

void linear_reference(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                      float* y) {
    const PackedLinear& w = weight.packed();
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
