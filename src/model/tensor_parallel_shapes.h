// Which model shapes split over tensor_parallel_size ranks: attention heads and the MLP's
// intermediate size must divide evenly; KV heads must divide evenly or, with fewer KV heads
// than ranks, be a divisor of the rank count (each KV head is then replicated on
// tp_size / num_key_value_heads ranks, as vLLM does). The vocabulary need not divide: its
// last shard is padded with zero rows whose logits are dropped.
#pragma once

#include "core/result.h"
#include "model/config.h"

namespace lmrun {

// An InvalidArgument error naming the dimension that does not split (subject:
// "tensor_parallel_size").
Status check_tensor_parallel_shapes(const ModelConfig& config, int tp_size);

}  // namespace lmrun
