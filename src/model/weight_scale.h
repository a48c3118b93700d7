// The per-output-channel scales of an int8 layer in a compressed-tensors checkpoint
// (`<layer>.weight_scale`), read as F32 [out, 1] whatever the stored dtype, a per-tensor scale
// ([1] or []) repeated for every output row, so the tensor-parallel loaders shard them with the
// weight's rows.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "model/checkpoint.h"

namespace lmrun {

struct WeightScale {
    std::vector<float> values;  // owns the data `info` points at
    TensorInfo info;            // F32 [out, 1]
};

// `weight` is the layer's `<layer>.weight` tensor (its rows give out).
Result<WeightScale> read_weight_scale(const Checkpoint& checkpoint, const std::string& layer,
                                      const TensorInfo& weight);

}  // namespace lmrun
