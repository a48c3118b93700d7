// Weight loaders: each fills (part of) a model parameter `dst` from the FULL checkpoint
// tensor `src`, taking this rank's tensor-parallel shard and converting the dtype
// (F32/BF16/F16 -> F32/BF16/F16). `dst` is allocated by the caller at the LOCAL shape.
// Matrices are HF [out_features, in_features]; column-parallel splits dim 0 (outputs),
// row-parallel splits dim 1 (inputs). A shape mismatch is an Error naming the checkpoint
// file, the tensor, the expected (full) shape and the actual one.
// With tp_size 1 every loader copies the whole tensor; TP > 1 only changes the numbers.
// The loaders of linear weights also take a kernels::LinearWeightBuilder: the shard is then
// packed straight from the mapped checkpoint into the kernels' layout (no staged copy), its
// [out_features, in_features] standing for the LOCAL shape.
#pragma once

#include <cstdint>
#include <span>

#include "core/result.h"
#include "core/tensor.h"
#include "kernels/linear_weight_builder.h"
#include "model/safetensors.h"

namespace lmrun {

namespace parallel {
class ProcessGroup;
}

// This rank's place in the tensor-parallel group, and the group the layers all-reduce over
// (null: one process, nothing to reduce).
struct ParallelConfig {
    int tp_rank = 0;
    int tp_size = 1;
    parallel::ProcessGroup* group = nullptr;
    // Ranks (this one included) holding their shards in this machine's memory: the model's
    // memory check counts this rank's shard that many times.
    int ranks_sharing_memory = 1;
};

// Same shape on every rank (norm weights, q/k norms, ...).
Status load_replicated(const TensorInfo& src, Tensor& dst);
// Rows [rank * n, (rank + 1) * n) of src, n = dst.dim(0); also for 1-D biases.
Status load_column_parallel(const TensorInfo& src, Tensor& dst, const ParallelConfig& parallel);
Status load_column_parallel(const TensorInfo& src, kernels::LinearWeightBuilder& dst,
                            const ParallelConfig& parallel);
// Columns [rank * n, (rank + 1) * n) of a 2-D src, n = dst.dim(1); a 1-D bias is replicated.
Status load_row_parallel(const TensorInfo& src, Tensor& dst, const ParallelConfig& parallel);
Status load_row_parallel(const TensorInfo& src, kernels::LinearWeightBuilder& dst,
                         const ParallelConfig& parallel);

enum class QkvShard { Q, K, V };
// dst: packed [(num_heads / tp + 2 * local_kv_heads) * head_dim, in] (or 1-D for biases),
// q rows first, then k, then v; local_kv_heads = max(1, num_kv_heads / tp). When
// num_kv_heads < tp_size each kv head is replicated on tp_size / num_kv_heads ranks.
Status load_qkv_shard(const TensorInfo& src, Tensor& dst, QkvShard shard, int64_t num_heads,
                      int64_t num_kv_heads, int64_t head_dim, const ParallelConfig& parallel);
Status load_qkv_shard(const TensorInfo& src, kernels::LinearWeightBuilder& dst, QkvShard shard,
                      int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                      const ParallelConfig& parallel);
// dst: packed rows of several column-parallel outputs (e.g. gate then up, full sizes
// `output_sizes`); fills this rank's part of output `index`.
Status load_merged_column_shard(const TensorInfo& src, Tensor& dst, int index,
                                std::span<const int64_t> output_sizes, const ParallelConfig& parallel);
Status load_merged_column_shard(const TensorInfo& src, kernels::LinearWeightBuilder& dst, int index,
                                std::span<const int64_t> output_sizes, const ParallelConfig& parallel);
// Embedding / LM head [vocab, hidden]: dst [rows_per_rank, hidden] gets vocab rows
// [rank * rows_per_rank, ...); rows past vocab_size (padding) are zero.
Status load_vocab_parallel(const TensorInfo& src, Tensor& dst, const ParallelConfig& parallel);
Status load_vocab_parallel(const TensorInfo& src, kernels::LinearWeightBuilder& dst,
                           const ParallelConfig& parallel);

}  // namespace lmrun
