// Weight quantization: what a checkpoint's config.json declares (quantization_config, as vLLM
// reads it) and what the user asks for (--quantization int8), and which linear layers that
// makes int8.
//
// Checkpoints: the compressed-tensors format (quant_method "compressed-tensors", written by
// llm-compressor), int8 W8A8 schemes only: weights int8, symmetric, one scale per output channel
// ("channel") or per tensor ("tensor"), stored as `<layer>.weight` (I8, [out, in]) and
// `<layer>.weight_scale` ([out, 1] or [1], any float dtype); activations dynamic, symmetric,
// per token. Everything else (int4 / packed formats, group or block strategies, static or
// asymmetric activations, fp8, sparsity, transforms, KV cache schemes, other quant_methods) is
// an Unsupported error that names the field and its value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace lmrun {

enum class ScaleStrategy { Channel, Tensor };

struct CompressedTensorsConfig {
    ScaleStrategy weight_strategy = ScaleStrategy::Channel;
    std::vector<std::string> targets;  // "Linear", layer names, or "re:<regex>" (matched from the start)
    std::vector<std::string> ignore;   // the same forms; these layers stay unquantized
    // Whether the linear layer `name` (e.g. "model.layers.0.self_attn.q_proj", "lm_head") is
    // stored quantized in the checkpoint.
    bool quantizes(const std::string& layer_name) const;
};

// config.json's "quantization_config" (absent or null: nullopt). `source` prefixes errors.
Result<std::optional<CompressedTensorsConfig>> parse_quantization_config(const nlohmann::json& config_json,
                                                                         const std::string& source);
// The quantization_config block of an int8 W8A8 checkpoint (for make_random_model).
nlohmann::json compressed_tensors_config_to_json(const CompressedTensorsConfig& config);

// How the model holds its weights.
struct WeightQuantization {
    // --quantization int8: float weights of the checkpoint are quantized to int8 at load.
    bool int8_at_load = false;
    // With int8_at_load: the embedding table and the LM head too (false keeps them in the
    // weight dtype; with tied embeddings they are one table).
    bool quantize_embeddings = true;
};

// "none" / "" (the checkpoint decides) or "int8"; errors name --quantization.
Result<WeightQuantization> parse_weight_quantization(const std::string& name, bool keep_embeddings);

}  // namespace lmrun
