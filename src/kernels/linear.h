// Linear layer y = x · Wᵀ (+ bias) with F32 activations and F32, BF16 or int8 weights (int8:
// per-output-channel weight scales, activations quantized per row on the fly, linear_int8.h).
// Shapes: W is given in HF layout [out_features, in_features]; x is [num_rows, in_features]
// F32 (row stride = in_features); y is [num_rows, out_features] F32; bias F32 [out_features].
// pack() repacks W once into oneDNN's blocked layout (BA16a64b2a for BF16, BA16a64b for F32,
// see linear_gemv.h), which our GEMV (few rows), our AVX512_BF16 GEMM (batched decode and, without
// AMX, prefill up to a few hundred rows) and oneDNN's matmul (the rest) all read, so the weight
// is held once. Accumulation is always F32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/dtype.h"

namespace lmrun::kernels {

struct PackedLinear;
struct LinearWeightState;

// Immutable after pack() (or LinearWeightBuilder::finish()); copies share the packed memory;
// thread-safe to call linear() on.
class LinearWeight {
  public:
    LinearWeight() = default;
    // src: row-major [out_features, in_features] of src_dtype (F32/BF16/F16). storage: F32, BF16,
    // or I8 (each output row quantized to symmetric int8 with its own scale).
    static LinearWeight pack(const void* src, DType src_dtype, int64_t out_features, int64_t in_features,
                             DType storage_dtype);
    // Weights already quantized (e.g. a compressed-tensors checkpoint): q [out_features,
    // in_features] row-major in [-127, 127] (-128 is clamped to -127), w[n][k] = q[n][k] · scales[n].
    static LinearWeight pack_int8(const int8_t* q, const float* scales, int64_t out_features,
                                  int64_t in_features);
    // A weight already in the packed layout (written earlier from packed().data, e.g. a packed
    // weight cache file): `data` holds num_tiles tiles of the layout that out_features,
    // in_features and storage_dtype imply (packed_nbytes() bytes), 64-byte aligned, and stays
    // valid while `owner` lives; int8 weights also take their num_tiles * 64 scales and
    // compensations (copied).
    static LinearWeight borrow_packed(const void* data, std::shared_ptr<const void> owner,
                                      int64_t out_features, int64_t in_features, DType storage_dtype,
                                      const float* scales = nullptr, const int32_t* compensation = nullptr);
    // Bytes of the packed tiles of such a weight (scales and compensations not included).
    static size_t packed_nbytes(int64_t out_features, int64_t in_features, DType storage_dtype);

    int64_t out_features() const;
    int64_t in_features() const;
    DType storage_dtype() const;
    size_t nbytes() const;  // bytes of weight memory held
    bool empty() const { return state_ == nullptr; }

    // The packed layout, for the kernels (linear_gemv.h).
    const PackedLinear& packed() const;
    // Packed weight plus the cached oneDNN primitives (linear_onednn.h).
    LinearWeightState& state() const { return *state_; }

  private:
    friend class LinearWeightBuilder;  // packs a weight part by part (linear_weight_builder.h)
    explicit LinearWeight(std::shared_ptr<LinearWeightState> state) : state_(std::move(state)) {}

    std::shared_ptr<LinearWeightState> state_;
};

// Rows up to this count go to the GEMV (weights streamed once for all rows, F32 activations);
// more go to oneDNN (BF16 activations for BF16 weights). Measured crossover on the LM head:
// 4 rows GEMV ~10 GB/s vs oneDNN ~8; 8 rows GEMV ~4 vs oneDNN ~5.6 (FMA-bound by then).
inline constexpr int64_t kGemvMaxRows = 4;
// On AVX2, BF16 weights go to the AVX2 GEMM from this many rows; fewer stay on the GEMV (48
// rows per pass over the weights, linear_gemv.cpp). The GEMM widens each weight chunk to F32
// in memory before its FMAs, a cost that few rows do not amortize; the GEMV unpacks the weights
// in registers between its FMAs. Zen 5 at LMRUN_ISA=avx2, kernel_bench, GEMV against GEMM:
// 1.6-1.7x at 9 rows, 1.3-1.45x at 16, 1.27x at 32, 1.1x at 64; on a Sapphire Rapids VM the two
// matched at 64 rows. `lmrun bench` (3 alternating rounds, from 9 → from 65): decode batch 16
// 116 → 158 tok/s, 32 140 → 170, 64 158 → 178. From 96 rows (prefill) the GEMV still led on Zen
// 5 by 2-7% per projection, within the noise of a whole prefill, and was never measured against
// the GEMM on Zen 3/4: the GEMM keeps those.
inline constexpr int64_t kAvx2GemmMinRows = 65;

// Dispatches on num_rows and kernel_isa(); y must not alias x. After one warm-up call with a
// given num_rows, the GEMV path (num_rows <= kGemvMaxRows) performs no heap allocation; the
// oneDNN path (more rows, split into power-of-two pieces of 8..512 rows plus a remainder)
// reuses cached primitives, memory objects and scratch buffers (oneDNN itself may allocate its
// small argument map per execute). On AVX2, BF16 weights with kAvx2GemmMinRows rows or more go
// to our AVX2 GEMM instead (oneDNN has no BF16 kernel there), which never allocates.
void linear(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias, float* y);
// The GEMV path for any num_rows: F32 activations, never allocates (oneDNN builds an argument
// map per call), used where a step must not allocate (decode plans).
void linear_allocation_free(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                            float* y);
// Grows the calling thread's buffers so that linear_allocation_free() on `weight` with up to
// max_rows rows allocates nothing afterwards on this thread: the size follows from the shapes,
// so nothing has to run at full size to find it.
void reserve_linear_workspace(const LinearWeight& weight, int64_t max_rows);
// Scalar, double-accumulating twin of linear(), reading the packed weight. For int8 weights it
// quantizes x with the same rule as the kernels and sums exactly in integers.
void linear_reference(const float* x, int64_t num_rows, const LinearWeight& weight, const float* bias,
                      float* y);

}  // namespace lmrun::kernels
