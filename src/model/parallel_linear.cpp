#include "model/parallel_linear.h"

#include <numeric>

#include "parallel/process_group.h"

namespace lmrun {

LinearBase::LinearBase(int64_t out_features, int64_t in_features, bool has_bias, DType storage_dtype)
    : out_features_(out_features),
      in_features_(in_features),
      storage_dtype_(storage_dtype),
      weight_builder_(out_features, in_features, storage_dtype) {
    if (has_bias) bias_ = Tensor::zeros(DType::F32, {out_features});
}

void LinearBase::forward(const float* x, int64_t num_rows, float* y, LinearPath path) const {
    const float* bias = bias_.empty() ? nullptr : bias_.data<float>();
    if (path == LinearPath::AllocationFree)
        return kernels::linear_allocation_free(x, num_rows, packed_, bias, y);
    kernels::linear(x, num_rows, packed_, bias, y);
}

void LinearBase::set_quantization(LinearQuant quant) {
    quant_ = quant;
    if (quant == LinearQuant::None) return;
    weight_builder_ =
        kernels::LinearWeightBuilder(out_features_, in_features_, DType::I8,
                                     quant == LinearQuant::Int8Checkpoint ? kernels::WeightRowSource::Int8
                                                                          : kernels::WeightRowSource::Float);
    if (quant == LinearQuant::Int8Checkpoint) staged_scale_ = Tensor::zeros(DType::F32, {out_features_, 1});
}

PackedWeightShape LinearBase::packed_shape() const {
    return {out_features_, in_features_, weight_builder_.storage_dtype()};
}

void LinearBase::finalize() {
    if (!packed_.empty()) {
        staged_scale_ = Tensor();
        return;
    }
    if (quant_ == LinearQuant::Int8Checkpoint)
        weight_builder_.set_scales(0, staged_scale_.data<float>(), out_features_);
    packed_ = weight_builder_.finish();
    staged_scale_ = Tensor();
}

ColumnParallelLinear::ColumnParallelLinear(int64_t out_features_total, int64_t in_features, bool has_bias,
                                           DType dtype, const ParallelConfig& parallel)
    : LinearBase(out_features_total / parallel.tp_size, in_features, has_bias, dtype), parallel_(parallel) {}

Status ColumnParallelLinear::load_weight(const TensorInfo& src) {
    return load_column_parallel(src, weight_builder_, parallel_);
}

Status ColumnParallelLinear::load_bias(const TensorInfo& src) {
    return load_column_parallel(src, bias_, parallel_);
}

Status ColumnParallelLinear::load_weight_scale(const TensorInfo& src) {
    return load_column_parallel(src, staged_scale_, parallel_);
}

RowParallelLinear::RowParallelLinear(int64_t out_features, int64_t in_features_total, bool has_bias,
                                     DType dtype, const ParallelConfig& parallel)
    : LinearBase(out_features, in_features_total / parallel.tp_size, has_bias, dtype), parallel_(parallel) {}

Status RowParallelLinear::load_weight(const TensorInfo& src) {
    return load_row_parallel(src, weight_builder_, parallel_);
}

Status RowParallelLinear::load_weight_scale(const TensorInfo& src) {
    return load_replicated(src, staged_scale_);
}

void RowParallelLinear::forward(const float* x, int64_t num_rows, float* y, LinearPath path) const {
    LinearBase::forward(x, num_rows, y, path);
    if (parallel_.group) parallel_.group->all_reduce(y, num_rows * out_features_);
}

namespace {
// With fewer kv heads than ranks, each rank keeps one replicated kv head (vLLM's rule).
int64_t local_kv_heads(int64_t num_kv_heads_total, int tp_size) {
    return num_kv_heads_total >= tp_size ? num_kv_heads_total / tp_size : 1;
}
}  // namespace

QKVParallelLinear::QKVParallelLinear(int64_t hidden_size, int64_t head_dim, int64_t num_heads_total,
                                     int64_t num_kv_heads_total, bool has_bias, DType dtype,
                                     const ParallelConfig& parallel)
    : LinearBase(
          (num_heads_total / parallel.tp_size + 2 * local_kv_heads(num_kv_heads_total, parallel.tp_size)) *
              head_dim,
          hidden_size, has_bias, dtype),
      head_dim_(head_dim),
      num_heads_total_(num_heads_total),
      num_kv_heads_total_(num_kv_heads_total),
      num_heads_(num_heads_total / parallel.tp_size),
      num_kv_heads_(local_kv_heads(num_kv_heads_total, parallel.tp_size)),
      parallel_(parallel) {}

Status QKVParallelLinear::load_weight(const TensorInfo& src, QkvShard shard) {
    return load_qkv_shard(src, weight_builder_, shard, num_heads_total_, num_kv_heads_total_, head_dim_,
                          parallel_);
}

Status QKVParallelLinear::load_bias(const TensorInfo& src, QkvShard shard) {
    return load_qkv_shard(src, bias_, shard, num_heads_total_, num_kv_heads_total_, head_dim_, parallel_);
}

Status QKVParallelLinear::load_weight_scale(const TensorInfo& src, QkvShard shard) {
    return load_qkv_shard(src, staged_scale_, shard, num_heads_total_, num_kv_heads_total_, head_dim_,
                          parallel_);
}

MergedColumnParallelLinear::MergedColumnParallelLinear(int64_t in_features,
                                                       std::vector<int64_t> output_sizes_total, DType dtype,
                                                       const ParallelConfig& parallel)
    : LinearBase(std::accumulate(output_sizes_total.begin(), output_sizes_total.end(), int64_t(0)) /
                     parallel.tp_size,
                 in_features, false, dtype),
      output_sizes_total_(std::move(output_sizes_total)),
      parallel_(parallel) {}

Status MergedColumnParallelLinear::load_weight(const TensorInfo& src, int shard_index) {
    return load_merged_column_shard(src, weight_builder_, shard_index, output_sizes_total_, parallel_);
}

Status MergedColumnParallelLinear::load_weight_scale(const TensorInfo& src, int shard_index) {
    return load_merged_column_shard(src, staged_scale_, shard_index, output_sizes_total_, parallel_);
}

}  // namespace lmrun
