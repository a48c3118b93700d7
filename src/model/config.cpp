#include "model/config.h"

#include <cmath>
#include <filesystem>

#include "core/json_io.h"
#include "model/config_limits.h"

namespace lmrun {
namespace {

// A field that is missing, of the wrong type or out of its domain: the file is at fault.
template <typename... Args>
Error config_error(const std::string& source, fmt::format_string<Args...> format, Args&&... args) {
    return with_subject(make_error(ErrorKind::Corrupt, format, std::forward<Args>(args)...), source);
}

struct ArchEntry {
    ModelArch arch;
    std::string_view class_name;
    std::string_view model_type;
};

constexpr ArchEntry kArchitectures[] = {
    {ModelArch::Llama, "LlamaForCausalLM", "llama"},
    {ModelArch::Qwen2, "Qwen2ForCausalLM", "qwen2"},
    {ModelArch::Qwen3, "Qwen3ForCausalLM", "qwen3"},
};

std::string supported_architectures() {
    std::string text;
    for (const ArchEntry& entry : kArchitectures) {
        if (!text.empty()) text += ", ";
        text += entry.class_name;
    }
    return text;
}

// Reads the architecture from "architectures"[0], falling back to "model_type".
Result<const ArchEntry*> parse_architecture(const nlohmann::json& json, const std::string& source) {
    auto archs = json.find("architectures");
    if (archs != json.end() && !archs->is_null()) {
        if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
            return config_error(source, "{}: field 'architectures' must be a non-empty list of strings",
                                source);
        std::string name = (*archs)[0].get<std::string>();
        for (const ArchEntry& entry : kArchitectures)
            if (entry.class_name == name) return &entry;
        return with_subject(
            make_error(ErrorKind::Unsupported, "{}: unsupported architecture '{}' (supported: {})", source,
                       name, supported_architectures()),
            source);
    }
    auto type = json.find("model_type");
    if (type == json.end() || !type->is_string())
        return config_error(source, "{}: missing required field 'architectures' (or 'model_type')", source);
    std::string name = type->get<std::string>();
    for (const ArchEntry& entry : kArchitectures)
        if (entry.model_type == name) return &entry;
    return with_subject(
        make_error(ErrorKind::Unsupported, "{}: unsupported model_type '{}' (supported architectures: {})",
                   source, name, supported_architectures()),
        source);
}

// A positive integer field; `fallback` (if set) is used when the field is absent or null.
Result<int64_t> positive_int(const nlohmann::json& json, const char* field, const std::string& source,
                             std::optional<int64_t> fallback = std::nullopt) {
    auto it = json.find(field);
    if (it == json.end() || it->is_null()) {
        if (fallback) return *fallback;
        return config_error(source, "{}: missing required field '{}'", source, field);
    }
    if (!it->is_number_integer())
        return config_error(source, "{}: field '{}' must be an integer, got {}", source, field, it->dump());
    int64_t value = it->get<int64_t>();
    if (value <= 0 || (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)))
        return config_error(source, "{}: field '{}' must be positive, got {}", source, field, it->dump());
    return value;
}

Result<double> positive_number(const nlohmann::json& json, const char* field, const std::string& source,
                               double fallback) {
    auto it = json.find(field);
    if (it == json.end() || it->is_null()) return fallback;
    if (!it->is_number())
        return config_error(source, "{}: field '{}' must be a number, got {}", source, field, it->dump());
    double value = it->get<double>();
    if (!(value > 0) || !std::isfinite(value))
        return config_error(source, "{}: field '{}' must be a positive finite number, got {}", source, field,
                            it->dump());
    return value;
}

Result<bool> boolean(const nlohmann::json& json, const char* field, const std::string& source,
                     bool fallback) {
    auto it = json.find(field);
    if (it == json.end() || it->is_null()) return fallback;
    if (!it->is_boolean())
        return config_error(source, "{}: field '{}' must be true or false, got {}", source, field,
                            it->dump());
    return it->get<bool>();
}

Result<int32_t> token_id(const nlohmann::json& value, const char* field, const std::string& source) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > INT32_MAX)
        return config_error(source, "{}: field '{}' must hold non-negative integer token ids, got {}", source,
                            field, value.dump());
    return int32_t(value.get<int64_t>());
}

Status parse_special_tokens(const nlohmann::json& json, const std::string& source, ModelConfig& config) {
    auto bos = json.find("bos_token_id");
    if (bos != json.end() && !bos->is_null()) {
        LMRUN_ASSIGN_OR_RETURN(config.bos_token_id, token_id(*bos, "bos_token_id", source));
    }
    auto eos = json.find("eos_token_id");
    if (eos == json.end() || eos->is_null()) return ok_status();
    if (eos->is_array()) {
        for (const nlohmann::json& item : *eos) {
            LMRUN_ASSIGN_OR_RETURN(int32_t id, token_id(item, "eos_token_id", source));
            config.eos_token_ids.push_back(id);
        }
    } else {
        LMRUN_ASSIGN_OR_RETURN(int32_t id, token_id(*eos, "eos_token_id", source));
        config.eos_token_ids.push_back(id);
    }
    return ok_status();
}

Status parse_dtype_field(const nlohmann::json& json, const std::string& source, ModelConfig& config) {
    const char* field = json.contains("torch_dtype") ? "torch_dtype" : "dtype";
    auto it = json.find(field);
    if (it == json.end() || it->is_null()) {
        config.torch_dtype = DType::F32;
        return ok_status();
    }
    std::optional<DType> dtype = it->is_string() ? parse_dtype(it->get<std::string>()) : std::nullopt;
    if (!dtype || (*dtype != DType::F32 && *dtype != DType::BF16 && *dtype != DType::F16))
        return with_subject(
            make_error(ErrorKind::Unsupported,
                       "{}: field '{}' has unsupported value {} (supported: float32, bfloat16, float16)",
                       source, field, it->dump()),
            source);
    config.torch_dtype = *dtype;
    return ok_status();
}

// Plain RoPE only: any scaling (linear, dynamic, yarn, llama3, ...) changes the numerics.
Status check_rope_scaling(const nlohmann::json& json, const std::string& source) {
    auto it = json.find("rope_scaling");
    if (it == json.end() || it->is_null()) return ok_status();
    if (it->is_string() && it->get<std::string>() == "default") return ok_status();
    if (it->is_object()) {
        auto type = it->find("rope_type");
        if (type == it->end()) type = it->find("type");
        if (type != it->end() && type->is_string() && type->get<std::string>() == "default")
            return ok_status();
    }
    return with_subject(
        make_error(ErrorKind::Unsupported,
                   "{}: field 'rope_scaling' = {} is not supported (only null or \"default\")", source,
                   it->dump()),
        source);
}

Status parse_sizes(const nlohmann::json& json, const std::string& source, ModelConfig& config) {
    LMRUN_ASSIGN_OR_RETURN(config.hidden_size, positive_int(json, "hidden_size", source));
    LMRUN_ASSIGN_OR_RETURN(config.intermediate_size, positive_int(json, "intermediate_size", source));
    LMRUN_ASSIGN_OR_RETURN(config.num_hidden_layers, positive_int(json, "num_hidden_layers", source));
    LMRUN_ASSIGN_OR_RETURN(config.num_attention_heads, positive_int(json, "num_attention_heads", source));
    LMRUN_ASSIGN_OR_RETURN(config.num_key_value_heads,
                           positive_int(json, "num_key_value_heads", source, config.num_attention_heads));
    LMRUN_ASSIGN_OR_RETURN(config.vocab_size, positive_int(json, "vocab_size", source));
    LMRUN_ASSIGN_OR_RETURN(config.max_position_embeddings,
                           positive_int(json, "max_position_embeddings", source));
    if (!json.contains("head_dim") || json["head_dim"].is_null()) {
        if (config.hidden_size % config.num_attention_heads != 0)
            return config_error(
                source, "{}: hidden_size {} is not divisible by num_attention_heads {} (and no head_dim)",
                source, config.hidden_size, config.num_attention_heads);
    }
    LMRUN_ASSIGN_OR_RETURN(config.head_dim, positive_int(json, "head_dim", source,
                                                         config.hidden_size / config.num_attention_heads));
    if (config.num_attention_heads % config.num_key_value_heads != 0)
        return config_error(source, "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                            source, config.num_attention_heads, config.num_key_value_heads);
    return ok_status();
}

}  // namespace

std::string_view architecture_name(ModelArch arch) {
    for (const ArchEntry& entry : kArchitectures)
        if (entry.arch == arch) return entry.class_name;
    return "?";
}

std::string_view model_type_name(ModelArch arch) {
    for (const ArchEntry& entry : kArchitectures)
        if (entry.arch == arch) return entry.model_type;
    return "?";
}

ModelConfig default_model_config(ModelArch arch) {
    ModelConfig config;
    config.arch = arch;
    config.architecture = std::string(architecture_name(arch));
    config.attention_bias = arch == ModelArch::Qwen2;
    config.qk_norm = arch == ModelArch::Qwen3;
    return config;
}

Result<ModelConfig> parse_model_config(const nlohmann::json& json, const std::string& source_name) {
    const std::string& source = source_name;
    if (!json.is_object()) return config_error(source, "{}: config must be a JSON object", source);
    LMRUN_ASSIGN_OR_RETURN(const ArchEntry* entry, parse_architecture(json, source));
    ModelConfig config = default_model_config(entry->arch);
    LMRUN_RETURN_IF_ERROR(parse_sizes(json, source, config));
    LMRUN_ASSIGN_OR_RETURN(config.rms_norm_eps, positive_number(json, "rms_norm_eps", source, 1e-6));
    LMRUN_ASSIGN_OR_RETURN(config.rope_theta, positive_number(json, "rope_theta", source, 10000.0));
    LMRUN_ASSIGN_OR_RETURN(config.tie_word_embeddings, boolean(json, "tie_word_embeddings", source, false));
    if (config.arch != ModelArch::Qwen2) {
        LMRUN_ASSIGN_OR_RETURN(config.attention_bias, boolean(json, "attention_bias", source, false));
    }
    LMRUN_RETURN_IF_ERROR(parse_dtype_field(json, source, config));
    LMRUN_RETURN_IF_ERROR(parse_special_tokens(json, source, config));
    LMRUN_RETURN_IF_ERROR(check_rope_scaling(json, source));
    LMRUN_ASSIGN_OR_RETURN(config.quantization, parse_quantization_config(json, source));
    LMRUN_RETURN_IF_ERROR(check_config_limits(config, source));
    return config;
}

Result<ModelConfig> load_model_config(const std::string& model_dir) {
    std::error_code error;
    if (!std::filesystem::is_directory(model_dir, error))
        return with_subject(
            make_error(ErrorKind::NotFound, "{}: model folder not found (or not a directory)", model_dir),
            model_dir);
    std::string path = (std::filesystem::path(model_dir) / "config.json").string();
    if (!std::filesystem::exists(path, error))
        return with_subject(make_error(ErrorKind::NotFound, "{}: no config.json in the model folder", path),
                            path);
    // A config is a few KB; the limit keeps a hostile file from filling memory.
    LMRUN_ASSIGN_OR_RETURN(nlohmann::json json, read_json_file(path, JsonLimits{64, size_t(16) << 20}));
    return parse_model_config(json, path);
}

nlohmann::json model_config_to_json(const ModelConfig& config) {
    nlohmann::json json;
    json["architectures"] = {config.architecture};
    json["model_type"] = model_type_name(config.arch);
    json["hidden_size"] = config.hidden_size;
    json["intermediate_size"] = config.intermediate_size;
    json["num_hidden_layers"] = config.num_hidden_layers;
    json["num_attention_heads"] = config.num_attention_heads;
    json["num_key_value_heads"] = config.num_key_value_heads;
    json["head_dim"] = config.head_dim;
    json["vocab_size"] = config.vocab_size;
    json["max_position_embeddings"] = config.max_position_embeddings;
    json["rms_norm_eps"] = config.rms_norm_eps;
    json["rope_theta"] = config.rope_theta;
    json["rope_scaling"] = nullptr;
    json["tie_word_embeddings"] = config.tie_word_embeddings;
    json["attention_bias"] = config.attention_bias;
    json["hidden_act"] = "silu";
    json["torch_dtype"] = config.torch_dtype == DType::BF16  ? "bfloat16"
                          : config.torch_dtype == DType::F16 ? "float16"
                                                             : "float32";
    json["bos_token_id"] =
        config.bos_token_id ? nlohmann::json(*config.bos_token_id) : nlohmann::json(nullptr);
    if (config.eos_token_ids.size() == 1) {
        json["eos_token_id"] = config.eos_token_ids[0];
    } else if (!config.eos_token_ids.empty()) {
        json["eos_token_id"] = config.eos_token_ids;
    }
    return json;
}

}  // namespace lmrun
