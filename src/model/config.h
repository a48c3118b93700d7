// Model hyper-parameters read from a Hugging Face config.json (Llama, Qwen2, Qwen3
// decoder-only families), and the reverse: a config.json for the random-model tool.
// Every missing or malformed field is an Error naming the file and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/result.h"
#include "model/quantization_config.h"

namespace lmrun {

enum class ModelArch { Llama, Qwen2, Qwen3 };

struct ModelConfig {
    ModelArch arch = ModelArch::Llama;
    std::string architecture = "LlamaForCausalLM";  // the HF class name from "architectures"
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int64_t num_hidden_layers = 0;
    int64_t num_attention_heads = 0;
    int64_t num_key_value_heads = 0;
    int64_t head_dim = 0;  // config "head_dim" if present, else hidden_size / num_attention_heads
    int64_t vocab_size = 0;
    int64_t max_position_embeddings = 0;
    double rms_norm_eps = 1e-6;
    double rope_theta = 10000.0;
    bool tie_word_embeddings = false;
    bool attention_bias = false;  // q/k/v biases: always true for Qwen2
    bool qk_norm = false;         // per-head RMSNorm on q and k before RoPE (Qwen3)
    DType torch_dtype = DType::F32;
    std::optional<int32_t> bos_token_id;
    std::vector<int32_t> eos_token_ids;
    // A pre-quantized checkpoint's scheme (config.json's quantization_config), if any.
    std::optional<CompressedTensorsConfig> quantization;
};

// The HF class name of an architecture ("Qwen3ForCausalLM") and its model_type ("qwen3").
std::string_view architecture_name(ModelArch arch);
std::string_view model_type_name(ModelArch arch);

// A config with the family's fixed flags (architecture, attention_bias, qk_norm) set and
// all sizes zero; callers fill the shape.
ModelConfig default_model_config(ModelArch arch);

// `source_name` (usually the path) prefixes every error message.
Result<ModelConfig> parse_model_config(const nlohmann::json& json, const std::string& source_name);
// Reads model_dir/config.json.
Result<ModelConfig> load_model_config(const std::string& model_dir);
// An HF-style config.json that parse_model_config reads back to the same ModelConfig.
nlohmann::json model_config_to_json(const ModelConfig& config);

}  // namespace lmrun
