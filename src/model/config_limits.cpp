#include "model/config_limits.h"

#include <algorithm>

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

namespace {

// Bytes of a [rows, cols] linear weight: int8 (a byte per weight and a float scale per row)
// or the float dtype.
double linear_bytes(double rows, double cols, bool int8, double float_bytes) {
    return int8 ? rows * cols + rows * 4 : rows * cols * float_bytes;
}

double ceil_div(int64_t value, int parts) {
    const int64_t rounded_up = (value + parts - 1) / parts;
    return double(rounded_up);
}

}  // namespace

double rank_model_memory_bytes(const ModelConfig& config, const ModelMemoryLayout& layout) {
    // In doubles: the limits keep every product far below 2^53, and no sum can overflow.
    const int tp = std::max(layout.tp_size, 1);
    const double float_bytes = double(dtype_size_bytes(layout.weight_dtype));
    const double hidden = double(config.hidden_size);
    const double head_dim = double(config.head_dim);
    const double layers = double(config.num_hidden_layers);
    // Column-parallel rows and row-parallel columns of this rank.
    // check_tensor_parallel_shapes made heads and intermediate_size divide by tp.
    const int64_t local_heads = config.num_attention_heads / tp;
    const int64_t local_intermediate = config.intermediate_size / tp;
    const double q_rows = double(local_heads) * head_dim;
    const double kv_rows = double(std::max<int64_t>(1, config.num_key_value_heads / tp)) * head_dim;
    const double intermediate = double(local_intermediate);
    const double vocab_rows = ceil_div(config.vocab_size, tp);  // the last shard is padded

    // Each linear kind: the layers holding it int8 and the layers holding it as floats.
    auto kind_bytes = [&](double rows, double cols, int64_t int8_layers) {
        const double int8_count = double(std::clamp<int64_t>(int8_layers, 0, config.num_hidden_layers));
        return int8_count * linear_bytes(rows, cols, true, float_bytes) +
               (layers - int8_count) * linear_bytes(rows, cols, false, float_bytes);
    };
    double bytes = kind_bytes(q_rows + 2 * kv_rows, hidden, layout.int8_qkv_layers) +
                   kind_bytes(hidden, q_rows, layout.int8_o_layers) +  // row-parallel: whole scales
                   kind_bytes(2 * intermediate, hidden, layout.int8_gate_up_layers) +
                   kind_bytes(hidden, intermediate, layout.int8_down_layers);
    bytes += linear_bytes(vocab_rows, hidden, layout.int8_lm_head, float_bytes);
    if (!config.tie_word_embeddings)
        bytes += linear_bytes(vocab_rows, hidden, layout.int8_embedding, float_bytes);

    double layer_f32 = 2 * hidden;  // the two RMSNorm weights
    if (config.attention_bias) layer_f32 += q_rows + 2 * kv_rows;
    if (config.qk_norm) layer_f32 += 2 * head_dim;
    const double f32_bytes = (layers * layer_f32 + hidden) * 4;
    const double rope_bytes = double(config.max_position_embeddings) * head_dim * 4;
    return bytes + f32_bytes + rope_bytes;
}

double model_memory_bytes(const ModelConfig& config, DType weight_dtype) {
    ModelMemoryLayout layout;
    layout.weight_dtype = weight_dtype;
    return rank_model_memory_bytes(config, layout);
}

Status check_model_fits_memory(const ModelConfig& config, const ModelMemoryLayout& layout,
                               int64_t available_bytes, const std::string& source) {
    const int sharing = std::max(layout.ranks_sharing_memory, 1);
    const double needed = rank_model_memory_bytes(config, layout) * double(sharing);
    if (needed <= double(available_bytes)) return ok_status();
    const bool any_int8 = layout.int8_qkv_layers > 0 || layout.int8_o_layers > 0 ||
                          layout.int8_gate_up_layers > 0 || layout.int8_down_layers > 0 ||
                          layout.int8_lm_head || layout.int8_embedding;
    const std::string weights = any_int8 ? fmt::format("int8 and {}", dtype_name(layout.weight_dtype))
                                         : std::string(dtype_name(layout.weight_dtype));
    const std::string shards = layout.tp_size > 1
                                   ? fmt::format(", {} rank{} on this machine holding 1/{} of it each",
                                                 sharing, sharing == 1 ? "" : "s", layout.tp_size)
                                   : "";
    constexpr double kGiB = double(int64_t(1) << 30);
    return with_subject(
        make_error(ErrorKind::ResourceExhausted,
                   "{}: the model needs {:.1f} GiB for its {} weights{}, {:.1f} GiB available", source,
                   needed / kGiB, weights, shards, double(available_bytes) / kGiB),
        source);
}

}  // namespace lmrun
