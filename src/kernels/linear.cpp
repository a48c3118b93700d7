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
    // pack_tiles writes every byte, padding lanes and padded k as zero (the kernels read them).
    state.buffer.reset(allocate_weight_memory(state.nbytes));
    LMRUN_CHECK(state.buffer != nullptr, "out of memory packing a linear weight");
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
// rows (kernel_bench), and never allocates. Where AMX exists, linear() leaves those rows to
// oneDNN's AMX kernels; linear_allocation_free() keeps the GEMM (oneDNN allocates per call).
bool bf16_gemm_applies(const PackedLinear& w, int64_t num_rows) {
    return w.dtype == DType::BF16 && num_rows > kGemvMaxRows && kernel_isa() >= Isa::Avx512Bf16;
}

}  // namespace

uint16_t* gemm_bf16_x_buffer(size_t count) {
    thread_local std::vector<uint16_t> buffer;
    if (buffer.size() < count) buffer.resize(count);
    return buffer.data();
}

void reserve_linear_workspace(const LinearWeight& weight, int64_t max_rows) {
    const PackedLinear& w = weight.packed();
    if (bf16_gemm_applies(w, max_rows)) gemm_bf16_x_buffer(size_t(max_rows * w.padded_in));
}

void linear_allocation_free(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                            float* y) {
    if (num_rows <= 0) return;
    const PackedLinear& w = weight.packed();
    if (bf16_gemm_applies(w, num_rows)) return linear_gemm_bf16_avx512(x, num_rows, w, bias, y);
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
