#include "model/tensor_parallel_shapes.h"

namespace lmrun {

Status check_tensor_parallel_shapes(const ModelConfig& config, int tp_size) {
    auto fail = [](Error error) { return with_subject(std::move(error), "tensor_parallel_size"); };
    if (tp_size < 1) return fail(make_error("tensor_parallel_size must be at least 1, got {}", tp_size));
    if (config.num_attention_heads % tp_size != 0)
        return fail(make_error("tensor_parallel_size {} does not divide the model's num_attention_heads {}",
                               tp_size, config.num_attention_heads));
    const int64_t kv_heads = config.num_key_value_heads;
    if (kv_heads >= tp_size ? kv_heads % tp_size != 0 : tp_size % kv_heads != 0)
        return fail(
            make_error("tensor_parallel_size {} does not divide the model's num_key_value_heads {} (and is "
                       "not a multiple "
                       "of it, which would replicate each KV head)",
                       tp_size, kv_heads));
    if (config.intermediate_size % tp_size != 0)
        return fail(make_error("tensor_parallel_size {} does not divide the model's intermediate_size {}",
                               tp_size, config.intermediate_size));
    return ok_status();
}

}  // namespace lmrun
