#include "model/config_limits.h"

namespace lmrun {
namespace {

Error unsupported(const std::string& source, std::string message) {
    return with_subject(make_error(ErrorKind::Unsupported, "{}: {}", source, message), source);
}

Status check_at_most(int64_t value, int64_t limit, const char* field, const std::string& source) {
    if (value <= limit) return ok_status();
    return unsupported(source, fmt::format("field '{}' = {} is larger than lmrun supports (at most {})",
                                           field, value, limit));
}

}  // namespace

Status check_config_limits(const ModelConfig& config, const std::string& source) {
    using Limits = ConfigLimits;
    LMRUN_RETURN_IF_ERROR(check_at_most(config.hidden_size, Limits::kMaxHiddenSize, "hidden_size", source));
    LMRUN_RETURN_IF_ERROR(
        check_at_most(config.intermediate_size, Limits::kMaxIntermediateSize, "intermediate_size", source));
    LMRUN_RETURN_IF_ERROR(
        check_at_most(config.num_hidden_layers, Limits::kMaxNumHiddenLayers, "num_hidden_layers", source));
    LMRUN_RETURN_IF_ERROR(check_at_most(config.num_attention_heads, Limits::kMaxNumAttentionHeads,
                                        "num_attention_heads", source));
    LMRUN_RETURN_IF_ERROR(check_at_most(config.vocab_size, Limits::kMaxVocabSize, "vocab_size", source));
    LMRUN_RETURN_IF_ERROR(check_at_most(config.max_position_embeddings, Limits::kMaxPositionEmbeddings,
                                        "max_position_embeddings", source));
    // RoPE rotates pairs of dimensions; the attention scratch is sized for kMaxHeadDim.
    if (config.head_dim > Limits::kMaxHeadDim || config.head_dim % 2 != 0)
        return unsupported(source,
                           fmt::format("unsupported head_dim {} (supported: even values from 2 to {})",
                                       config.head_dim, Limits::kMaxHeadDim));
    if (config.num_key_value_heads > config.num_attention_heads)
        return unsupported(source, fmt::format("num_key_value_heads {} is more than num_attention_heads {}",
                                               config.num_key_value_heads, config.num_attention_heads));
    const int64_t group = config.num_attention_heads / config.num_key_value_heads;
    if (group > Limits::kMaxQueriesPerKvHead)
        return unsupported(
            source, fmt::format("unsupported grouped-query attention: {} query heads per KV head "
                                "(num_attention_heads {} / num_key_value_heads {}; supported: up to {})",
                                group, config.num_attention_heads, config.num_key_value_heads,
                                Limits::kMaxQueriesPerKvHead));
    return ok_status();
}

double model_memory_bytes(const ModelConfig& config, DType weight_dtype) {
    // In doubles: the limits keep every product far below 2^53, and no sum can overflow.
    const double hidden = double(config.hidden_size);
    const double head_dim = double(config.head_dim);
    const double q_rows = double(config.num_attention_heads) * head_dim;
    const double kv_rows = double(config.num_key_value_heads) * head_dim;
    const double intermediate = double(config.intermediate_size);
    double layer_params = (q_rows + 2 * kv_rows) * hidden  // qkv_proj
                          + hidden * q_rows                // o_proj
                          + 3 * intermediate * hidden;     // gate_up_proj and down_proj
    double layer_f32 = 2 * hidden;                         // the two RMSNorm weights
    if (config.attention_bias) layer_f32 += q_rows + 2 * kv_rows;
    if (config.qk_norm) layer_f32 += 2 * head_dim;
    const double vocab_params = double(config.vocab_size) * hidden * (config.tie_word_embeddings ? 1 : 2);
    const double weight_bytes = (double(config.num_hidden_layers) * layer_params + vocab_params) *
                                double(dtype_size_bytes(weight_dtype));
    const double f32_bytes = (double(config.num_hidden_layers) * layer_f32 + hidden) * 4;
    const double rope_bytes = double(config.max_position_embeddings) * head_dim * 4;
    return weight_bytes + f32_bytes + rope_bytes;
}

Status check_model_fits_memory(const ModelConfig& config, DType weight_dtype, int64_t available_bytes,
                               const std::string& source) {
    const double needed = model_memory_bytes(config, weight_dtype);
    if (needed <= double(available_bytes)) return ok_status();
    constexpr double kGiB = double(int64_t(1) << 30);
    return with_subject(
        make_error(ErrorKind::ResourceExhausted,
                   "{}: the model needs {:.1f} GiB for its {} weights, {:.1f} GiB available", source,
                   needed / kGiB, dtype_name(weight_dtype), double(available_bytes) / kGiB),
        source);
}

}  // namespace lmrun
