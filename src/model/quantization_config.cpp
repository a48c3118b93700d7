#include "model/quantization_config.h"

#include <regex>

namespace lmrun {
namespace {

Error unsupported_scheme(const std::string& source, const std::string& what) {
    return make_error(ErrorKind::Unsupported,
                      "{}: quantization_config: {} is not supported (lmrun loads compressed-tensors int8 "
                      "W8A8: int8 symmetric weights per channel or tensor, dynamic per-token int8 "
                      "activations)",
                      source, what);
}

std::string describe(const nlohmann::json& value) {
    return value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump();
}

// A field of a QuantizationArgs object; absent is treated as null.
const nlohmann::json& field(const nlohmann::json& args, const char* name) {
    static const nlohmann::json null_value;
    auto it = args.find(name);
    return it == args.end() ? null_value : *it;
}

Result<std::vector<std::string>> string_list(const nlohmann::json& value, const std::string& where,
                                             const std::string& source) {
    std::vector<std::string> list;
    if (value.is_null()) return list;
    if (!value.is_array())
        return make_error(ErrorKind::Corrupt, "{}: {} must be a list of strings", source, where);
    for (const nlohmann::json& item : value) {
        if (!item.is_string())
            return make_error(ErrorKind::Corrupt, "{}: {} must be a list of strings", source, where);
        list.push_back(item.get<std::string>());
    }
    return list;
}

// Checks one QuantizationArgs block ("weights" or "input_activations") of a config group.
Status check_args(const nlohmann::json& args, bool weights, const std::string& where,
                  const std::string& source, ScaleStrategy* weight_strategy) {
    if (args.is_null()) {
        return unsupported_scheme(source, weights
                                              ? where + " = null (unquantized weights in a quantized group)"
                                              : where + " = null (weight-only quantization, W8A16)");
    }
    if (!args.is_object()) return make_error(ErrorKind::Corrupt, "{}: {} must be an object", source, where);
    const nlohmann::json& bits = field(args, "num_bits");
    if (!(bits.is_number_integer() && bits.get<int64_t>() == 8))
        return unsupported_scheme(source, where + ".num_bits " + describe(bits) + " (only 8)");
    const nlohmann::json& type = field(args, "type");
    if (!type.is_null() && type != "int")
        return unsupported_scheme(source, where + ".type " + describe(type));
    const nlohmann::json& symmetric = field(args, "symmetric");
    if (!symmetric.is_null() && symmetric != true)
        return unsupported_scheme(source, where + ".symmetric false (asymmetric, zero points)");
    for (const char* name : {"group_size", "block_structure", "actorder"}) {
        const nlohmann::json& value = field(args, name);
        if (!value.is_null() && value != false)
            return unsupported_scheme(source, where + "." + name + " " + describe(value));
    }
    const nlohmann::json& strategy_field = field(args, "strategy");
    const std::string strategy = strategy_field.is_string() ? strategy_field.get<std::string>() : "";
    const nlohmann::json& dynamic = field(args, "dynamic");
    if (weights) {
        if (strategy == "channel") {
            *weight_strategy = ScaleStrategy::Channel;
        } else if (strategy == "tensor") {
            *weight_strategy = ScaleStrategy::Tensor;
        } else {
            return unsupported_scheme(source, where + ".strategy " + describe(strategy_field));
        }
        if (dynamic == true) return unsupported_scheme(source, where + ".dynamic true");
        return ok_status();
    }
    if (strategy != "token")
        return unsupported_scheme(source,
                                  where + ".strategy " + describe(strategy_field) + " (only 'token')");
    if (dynamic != true)
        return unsupported_scheme(source,
                                  where + ".dynamic " + describe(dynamic) + " (static activation scales)");
    return ok_status();
}

Result<CompressedTensorsConfig> parse_compressed_tensors(const nlohmann::json& q, const std::string& source) {
    const nlohmann::json& format = field(q, "format");
    if (format != "int-quantized" && format != "naive-quantized")
        return unsupported_scheme(source, "format " + describe(format));
    const nlohmann::json& sparsity = field(q, "sparsity_config");
    if (!sparsity.is_null() &&
        !(sparsity.is_object() && (sparsity.empty() || field(sparsity, "format") == "dense")))
        return unsupported_scheme(source,
                                  "sparsity_config with format " + describe(field(sparsity, "format")));
    if (!field(q, "transform_config").is_null()) return unsupported_scheme(source, "transform_config");
    if (!field(q, "kv_cache_scheme").is_null())
        return unsupported_scheme(source, "kv_cache_scheme (static KV cache scales; use --kv-cache-dtype)");
    CompressedTensorsConfig config;
    LMRUN_ASSIGN_OR_RETURN(config.ignore, string_list(field(q, "ignore"), "ignore", source));
    const nlohmann::json& groups = field(q, "config_groups");
    if (!groups.is_object() || groups.empty())
        return make_error(ErrorKind::Corrupt,
                          "{}: quantization_config.config_groups must be a non-empty object", source);
    bool first = true;
    for (auto group = groups.begin(); group != groups.end(); ++group) {
        const std::string where = "config_groups." + group.key();
        if (!group->is_object())
            return make_error(ErrorKind::Corrupt, "{}: {} must be an object", source, where);
        const nlohmann::json& group_format = field(*group, "format");
        if (!group_format.is_null() && group_format != "int-quantized" && group_format != "naive-quantized")
            return unsupported_scheme(source, where + ".format " + describe(group_format));
        ScaleStrategy strategy = ScaleStrategy::Channel;
        LMRUN_RETURN_IF_ERROR(
            check_args(field(*group, "weights"), true, where + ".weights", source, &strategy));
        LMRUN_RETURN_IF_ERROR(check_args(field(*group, "input_activations"), false,
                                         where + ".input_activations", source, nullptr));
        const nlohmann::json& output = field(*group, "output_activations");
        if (!output.is_null()) return unsupported_scheme(source, where + ".output_activations");
        if (!first && strategy != config.weight_strategy)
            return unsupported_scheme(source, "config groups with different weight strategies");
        config.weight_strategy = strategy;
        first = false;
        LMRUN_ASSIGN_OR_RETURN(std::vector<std::string> targets,
                               string_list(field(*group, "targets"), where + ".targets", source));
        if (targets.empty())
            return make_error(ErrorKind::Corrupt, "{}: {}.targets must list the layers it quantizes", source,
                              where);
        config.targets.insert(config.targets.end(), targets.begin(), targets.end());
    }
    for (const std::vector<std::string>* patterns : {&config.targets, &config.ignore}) {
        for (const std::string& pattern : *patterns) {
            if (!pattern.starts_with("re:")) continue;
            try {
                std::regex compiled(pattern.substr(3));
            } catch (const std::regex_error&) {
                return make_error(ErrorKind::Corrupt, "{}: quantization_config: invalid regex '{}'", source,
                                  pattern);
            }
        }
    }
    return config;
}

// compressed-tensors' rule: a plain entry names a layer (or "Linear", the class), "re:" entries
// are regexes matched at the start of the name.
bool matches(const std::string& pattern, const std::string& layer_name) {
    if (pattern == "Linear") return true;
    if (!pattern.starts_with("re:")) return pattern == layer_name;
    std::regex compiled(pattern.substr(3));
    return std::regex_search(layer_name, compiled, std::regex_constants::match_continuous);
}

}  // namespace

bool CompressedTensorsConfig::quantizes(const std::string& layer_name) const {
    for (const std::string& pattern : ignore)
        if (pattern != "Linear" && matches(pattern, layer_name)) return false;
    for (const std::string& pattern : targets)
        if (matches(pattern, layer_name)) return true;
    return false;
}

Result<std::optional<CompressedTensorsConfig>> parse_quantization_config(const nlohmann::json& config_json,
                                                                         const std::string& source) {
    auto it = config_json.find("quantization_config");
    if (it == config_json.end() || it->is_null()) return std::optional<CompressedTensorsConfig>();
    if (!it->is_object())
        return make_error(ErrorKind::Corrupt, "{}: field 'quantization_config' must be an object", source);
    const nlohmann::json& method = field(*it, "quant_method");
    if (method != "compressed-tensors") {
        return make_error(ErrorKind::Unsupported,
                          "{}: quantization_config.quant_method {} is not supported (supported: "
                          "'compressed-tensors' int8 W8A8; float checkpoints can be quantized at load with "
                          "--quantization int8)",
                          source, describe(method));
    }
    LMRUN_ASSIGN_OR_RETURN(CompressedTensorsConfig config, parse_compressed_tensors(*it, source));
    return std::optional<CompressedTensorsConfig>(std::move(config));
}

nlohmann::json compressed_tensors_config_to_json(const CompressedTensorsConfig& config) {
    auto args = [](bool weights, const char* strategy) {
        return nlohmann::json{{"num_bits", 8},
                              {"type", "int"},
                              {"symmetric", true},
                              {"dynamic", !weights},
                              {"strategy", strategy},
                              {"group_size", nullptr},
                              {"block_structure", nullptr},
                              {"actorder", nullptr},
                              {"observer", weights ? nlohmann::json("minmax") : nlohmann::json(nullptr)},
                              {"observer_kwargs", nlohmann::json::object()}};
    };
    const char* weight_strategy = config.weight_strategy == ScaleStrategy::Channel ? "channel" : "tensor";
    nlohmann::json group = {{"targets", config.targets},
                            {"weights", args(true, weight_strategy)},
                            {"input_activations", args(false, "token")},
                            {"output_activations", nullptr}};
    return {{"quant_method", "compressed-tensors"},
            {"format", "int-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups", {{"group_0", group}}},
            {"ignore", config.ignore},
            {"kv_cache_scheme", nullptr},
            {"sparsity_config", nlohmann::json::object()}};
}

Result<WeightQuantization> parse_weight_quantization(const std::string& name, bool keep_embeddings) {
    WeightQuantization quantization;
    if (name == "int8") {
        quantization.int8_at_load = true;
    } else if (!name.empty() && name != "none") {
        return make_error(ErrorKind::Unsupported,
                          "--quantization: '{}' is not supported (supported: int8, none)", name);
    }
    quantization.quantize_embeddings = !keep_embeddings;
    return quantization;
}

}  // namespace lmrun
