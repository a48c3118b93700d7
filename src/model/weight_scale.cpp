#include "model/weight_scale.h"

#include <cmath>
#include <cstring>

namespace lmrun {

Result<WeightScale> read_weight_scale(const Checkpoint& checkpoint, const std::string& layer,
                                      const TensorInfo& weight) {
    LMRUN_ASSIGN_OR_RETURN(const TensorInfo* src, checkpoint.get(layer + ".weight_scale"));
    const int64_t rows = weight.shape.empty() ? 1 : weight.shape[0];
    const int64_t numel = src->numel();
    const bool per_channel = numel == rows && (src->shape == std::vector<int64_t>{rows, 1} ||
                                               src->shape == std::vector<int64_t>{rows});
    const bool per_tensor = numel == 1 && src->shape.size() <= 1;
    if (!per_channel && !per_tensor)
        return make_error(ErrorKind::Corrupt,
                          "{}: tensor '{}' has shape {}, expected [{}, 1] (per channel) or [1]",
                          src->file_path, src->name, src->shape_string(), rows);
    if (src->dtype != DType::F32 && src->dtype != DType::BF16 && src->dtype != DType::F16)
        return make_error(ErrorKind::Corrupt, "{}: tensor '{}' has dtype {}, expected a float type",
                          src->file_path, src->name, dtype_name(src->dtype));
    // The mapping may be unaligned for the dtype: copy the bytes out first.
    std::vector<unsigned char> bytes(src->nbytes);
    std::memcpy(bytes.data(), src->data, src->nbytes);
    std::vector<float> stored(static_cast<size_t>(numel));
    convert_to_f32(bytes.data(), src->dtype, stored.data(), size_t(numel));
    for (float value : stored) {
        if (!std::isfinite(value) || value < 0.0f)
            return make_error(ErrorKind::Corrupt, "{}: tensor '{}' holds a negative or non-finite scale {}",
                              src->file_path, src->name, value);
    }
    WeightScale scale;
    scale.values = per_tensor ? std::vector<float>(size_t(rows), stored[0]) : std::move(stored);
    scale.info.name = src->name;
    scale.info.dtype = DType::F32;
    scale.info.shape = {rows, 1};
    scale.info.data = scale.values.data();
    scale.info.nbytes = scale.values.size() * sizeof(float);
    scale.info.file_path = src->file_path;
    return scale;
}

}  // namespace lmrun
