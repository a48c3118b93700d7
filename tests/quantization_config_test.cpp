// config.json's quantization_config: the compressed-tensors int8 W8A8 schemes lmrun loads, the
// layers they cover, and an Unsupported error naming the field for every other scheme.
#include "model/quantization_config.h"

#include <gtest/gtest.h>

#include <functional>

#include "model/config.h"
#include "model/random_checkpoint.h"

namespace lmrun {
namespace {

nlohmann::json w8a8_config() {
    CompressedTensorsConfig scheme{ScaleStrategy::Channel, {"Linear"}, {"lm_head"}};
    return compressed_tensors_config_to_json(scheme);
}

nlohmann::json with_quantization(const nlohmann::json& quantization) {
    ModelConfig config = qwen3_0_6b_config();
    nlohmann::json json = model_config_to_json(config);
    json["quantization_config"] = quantization;
    return json;
}

TEST(QuantizationConfig, AbsentOrNullIsNone) {
    nlohmann::json json = model_config_to_json(qwen3_0_6b_config());
    auto parsed = parse_quantization_config(json, "c.json");
    ASSERT_TRUE(parsed.ok());
    EXPECT_FALSE(parsed->has_value());
    json["quantization_config"] = nullptr;
    parsed = parse_quantization_config(json, "c.json");
    ASSERT_TRUE(parsed.ok());
    EXPECT_FALSE(parsed->has_value());
}

TEST(QuantizationConfig, ReadsTheW8A8SchemeItWrites) {
    for (ScaleStrategy strategy : {ScaleStrategy::Channel, ScaleStrategy::Tensor}) {
        CompressedTensorsConfig written{strategy, {"Linear"}, {"lm_head", "re:.*down_proj$"}};
        auto parsed =
            parse_quantization_config(with_quantization(compressed_tensors_config_to_json(written)), "c");
        ASSERT_TRUE(parsed.ok()) << parsed.error().message;
        ASSERT_TRUE(parsed->has_value());
        const CompressedTensorsConfig& config = **parsed;
        EXPECT_EQ(config.weight_strategy, strategy);
        EXPECT_TRUE(config.quantizes("model.layers.0.self_attn.q_proj"));
        EXPECT_FALSE(config.quantizes("lm_head"));
        EXPECT_FALSE(config.quantizes("model.layers.3.mlp.down_proj"));
        EXPECT_TRUE(config.quantizes("model.layers.3.mlp.up_proj"));
    }
    // The whole model config parses with it, and keeps it.
    auto model = parse_model_config(with_quantization(w8a8_config()), "c.json");
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_TRUE(model->quantization.has_value());
}

TEST(QuantizationConfig, TargetsNameLayersOrMatchRegexesFromTheStart) {
    CompressedTensorsConfig config{ScaleStrategy::Channel, {"re:model\\.layers\\.1\\.", "lm_head"}, {}};
    EXPECT_TRUE(config.quantizes("model.layers.1.mlp.up_proj"));
    EXPECT_FALSE(config.quantizes("model.layers.0.mlp.up_proj"));
    EXPECT_FALSE(config.quantizes("xmodel.layers.1.mlp.up_proj"));  // matched from the start only
    EXPECT_TRUE(config.quantizes("lm_head"));
}

// Each edit of a valid config makes one unsupported scheme; the error must say which.
struct BadScheme {
    const char* name;
    std::function<void(nlohmann::json&)> edit;
    std::vector<const char*> mentions;
};

TEST(QuantizationConfig, UnsupportedSchemesAreErrorsNamingThem) {
    auto group = [](nlohmann::json& q) -> nlohmann::json& { return q["config_groups"]["group_0"]; };
    std::vector<BadScheme> cases = {
        {"int4", [&](nlohmann::json& q) { group(q)["weights"]["num_bits"] = 4; }, {"num_bits", "4"}},
        {"group size",
         [&](nlohmann::json& q) {
             group(q)["weights"]["strategy"] = "group";
             group(q)["weights"]["group_size"] = 128;
         },
         {"group_size", "128"}},
        {"block",
         [&](nlohmann::json& q) {
             group(q)["weights"]["block_structure"] = nlohmann::json::array({128, 128});
         },
         {"block_structure"}},
        {"static activations",
         [&](nlohmann::json& q) { group(q)["input_activations"]["dynamic"] = false; },
         {"input_activations.dynamic", "static"}},
        {"per-tensor activations",
         [&](nlohmann::json& q) { group(q)["input_activations"]["strategy"] = "tensor"; },
         {"input_activations.strategy", "'tensor'"}},
        {"asymmetric activations",
         [&](nlohmann::json& q) { group(q)["input_activations"]["symmetric"] = false; },
         {"input_activations.symmetric", "asymmetric"}},
        {"weight-only", [&](nlohmann::json& q) { group(q)["input_activations"] = nullptr; }, {"W8A16"}},
        {"fp8",
         [&](nlohmann::json& q) {
             group(q)["weights"]["type"] = "float";
             q["format"] = "float-quantized";
         },
         {"format", "float-quantized"}},
        {"packed int4", [&](nlohmann::json& q) { q["format"] = "pack-quantized"; }, {"pack-quantized"}},
        {"kv cache scheme",
         [&](nlohmann::json& q) {
             q["kv_cache_scheme"] = {{"num_bits", 8}, {"type", "float"}};
         },
         {"kv_cache_scheme"}},
        {"sparsity",
         [&](nlohmann::json& q) {
             q["sparsity_config"] = {{"format", "sparse-24-bitmask"}};
         },
         {"sparsity_config", "sparse-24-bitmask"}},
        {"gptq",
         [&](nlohmann::json& q) {
             q = {{"quant_method", "gptq"}, {"bits", 4}};
         },
         {"quant_method", "'gptq'"}},
        {"awq",
         [&](nlohmann::json& q) {
             q = {{"quant_method", "awq"}};
         },
         {"'awq'", "--quantization int8"}},
    };
    for (const BadScheme& bad : cases) {
        nlohmann::json quantization = w8a8_config();
        bad.edit(quantization);
        auto parsed = parse_model_config(with_quantization(quantization), "dir/config.json");
        ASSERT_FALSE(parsed.ok()) << bad.name;
        EXPECT_EQ(parsed.error().kind, ErrorKind::Unsupported) << bad.name << ": " << parsed.error().message;
        EXPECT_NE(parsed.error().message.find("dir/config.json"), std::string::npos)
            << parsed.error().message;
        for (const char* mention : bad.mentions)
            EXPECT_NE(parsed.error().message.find(mention), std::string::npos)
                << bad.name << ": '" << mention << "' not in: " << parsed.error().message;
    }
}

TEST(QuantizationConfig, MalformedBlocksAreCorrupt) {
    nlohmann::json quantization = w8a8_config();
    quantization["config_groups"] = nlohmann::json::object();
    auto parsed = parse_model_config(with_quantization(quantization), "c.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().kind, ErrorKind::Corrupt);
    quantization = w8a8_config();
    quantization["ignore"] = "lm_head";
    parsed = parse_model_config(with_quantization(quantization), "c.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error().message.find("ignore"), std::string::npos);
    quantization = w8a8_config();
    quantization["ignore"] = {"re:(unclosed"};
    parsed = parse_model_config(with_quantization(quantization), "c.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error().message.find("re:(unclosed"), std::string::npos);
}

TEST(QuantizationConfig, QuantizationFlag) {
    auto none = parse_weight_quantization("", false);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->int8_at_load);
    auto int8 = parse_weight_quantization("int8", true);
    ASSERT_TRUE(int8.ok());
    EXPECT_TRUE(int8->int8_at_load);
    EXPECT_FALSE(int8->quantize_embeddings);
    auto bad = parse_weight_quantization("fp8", false);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, ErrorKind::Unsupported);
    EXPECT_NE(bad.error().message.find("--quantization"), std::string::npos);
}

}  // namespace
}  // namespace lmrun
