// Linear layers that own their tensor-parallel sharding, as in vLLM/nano-vLLM:
// each knows which slice of a checkpoint tensor it holds (weight_loader), and
// fused layers (QKV, gate/up) pack several checkpoint tensors into one matrix so
// a single GEMM computes them. Each load_weight packs its part straight from the mapped
// checkpoint into the kernel's layout (no staged copy of the weight); finalize() hands over the
// packed weight once every part is in.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "kernels/linear.h"
#include "kernels/linear_weight_builder.h"
#include "model/forward_context.h"
#include "model/packed_weight_cache.h"
#include "model/safetensors.h"
#include "model/weight_loader.h"

namespace lmrun {

// How a layer's weight arrives and how it is held once packed.
enum class LinearQuant {
    None,           // float checkpoint, held in the storage dtype
    Int8AtLoad,     // float checkpoint, quantized to int8 per output channel as it is packed
    Int8Checkpoint  // int8 in the checkpoint (`weight` I8 and `weight_scale`), held as int8
};

class LinearBase {
  public:
    // out_features / in_features are the LOCAL (per-rank) sizes.
    LinearBase(int64_t out_features, int64_t in_features, bool has_bias, DType storage_dtype);
    // Chosen before loading. Int8 weights are packed as they load, like float ones;
    // Int8Checkpoint stages only the F32 scales [out, 1] (they shard with the output rows, like
    // the weight, and may arrive after it).
    void set_quantization(LinearQuant quant);
    LinearQuant quantization() const { return quant_; }

    // y[num_rows, out] = x[num_rows, in] · Wᵀ (+ b)
    void forward(const float* x, int64_t num_rows, float* y, LinearPath path = LinearPath::Fastest) const;
    // The packed weight is complete (every part loaded): the kernels may use it.
    void finalize();
    // What the packed weight is (its shape and storage dtype, known once the quantization is).
    PackedWeightShape packed_shape() const;
    // Takes an already packed weight of packed_shape() (a packed weight cache's): the loaders
    // need not be given the weight (or its scales), and finalize() keeps this one.
    void use_packed(kernels::LinearWeight weight) { packed_ = std::move(weight); }
    int64_t out_features() const { return out_features_; }
    int64_t in_features() const { return in_features_; }
    size_t weight_nbytes() const { return packed_.nbytes(); }
    const kernels::LinearWeight& packed() const { return packed_; }

  protected:
    int64_t out_features_;
    int64_t in_features_;
    DType storage_dtype_;
    kernels::LinearWeightBuilder weight_builder_;  // [out, in], packed part by part until finalize()
    Tensor staged_scale_;                          // F32 [out, 1] for Int8Checkpoint, until finalize()
    Tensor bias_;                                  // F32 [out], empty if no bias
    kernels::LinearWeight packed_;
    LinearQuant quant_ = LinearQuant::None;
};

// Output features split across ranks (dim 0).
class ColumnParallelLinear : public LinearBase {
  public:
    ColumnParallelLinear(int64_t out_features_total, int64_t in_features, bool has_bias, DType dtype,
                         const ParallelConfig& parallel);
    Status load_weight(const TensorInfo& src);
    Status load_bias(const TensorInfo& src);
    Status load_weight_scale(const TensorInfo& src);  // F32 [out_total, 1]

  private:
    ParallelConfig parallel_;
};

// Input features split across ranks (dim 1): each rank computes a partial sum of the output,
// and forward() all-reduces it over the group (vLLM's reduce_results), so every rank ends
// with the full output.
class RowParallelLinear : public LinearBase {
  public:
    RowParallelLinear(int64_t out_features, int64_t in_features_total, bool has_bias, DType dtype,
                      const ParallelConfig& parallel);
    Status load_weight(const TensorInfo& src);
    Status load_weight_scale(const TensorInfo& src);  // F32 [out, 1], the same on every rank
    void forward(const float* x, int64_t num_rows, float* y, LinearPath path = LinearPath::Fastest) const;

  private:
    ParallelConfig parallel_;
};

// q, k and v projections packed into one matrix: rows [q | k | v] of this rank's heads.
class QKVParallelLinear : public LinearBase {
  public:
    QKVParallelLinear(int64_t hidden_size, int64_t head_dim, int64_t num_heads_total,
                      int64_t num_kv_heads_total, bool has_bias, DType dtype, const ParallelConfig& parallel);
    Status load_weight(const TensorInfo& src, QkvShard shard);
    Status load_bias(const TensorInfo& src, QkvShard shard);
    Status load_weight_scale(const TensorInfo& src, QkvShard shard);  // F32 [shard rows, 1]
    int64_t num_heads() const { return num_heads_; }                  // local
    int64_t num_kv_heads() const { return num_kv_heads_; }            // local
    int64_t head_dim() const { return head_dim_; }

  private:
    int64_t head_dim_, num_heads_total_, num_kv_heads_total_, num_heads_, num_kv_heads_;
    ParallelConfig parallel_;
};

// Several column-parallel outputs packed into one matrix (gate then up).
class MergedColumnParallelLinear : public LinearBase {
  public:
    MergedColumnParallelLinear(int64_t in_features, std::vector<int64_t> output_sizes_total, DType dtype,
                               const ParallelConfig& parallel);
    Status load_weight(const TensorInfo& src, int shard_index);
    Status load_weight_scale(const TensorInfo& src, int shard_index);  // F32 [output size, 1]

  private:
    std::vector<int64_t> output_sizes_total_;
    ParallelConfig parallel_;
};

}  // namespace lmrun
