#include "model/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace lmrun {
namespace {

using testing::make_temp_dir;
using testing::testdata_path;

nlohmann::json minimal_config() {
    return nlohmann::json::parse(R"({
        "architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 100, "max_position_embeddings": 256})");
}

// Parses `json` and expects an error that mentions every piece of `needles`.
void expect_config_error(const nlohmann::json& json, std::initializer_list<std::string> needles) {
    Result<ModelConfig> config = parse_model_config(json, "cfg/config.json");
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.error().message.find("cfg/config.json"), std::string::npos) << config.error().message;
    for (const std::string& needle : needles)
        EXPECT_NE(config.error().message.find(needle), std::string::npos) << config.error().message;
}

TEST(Config, LoadsStories260k) {
    Result<ModelConfig> config = load_model_config(testdata_path("stories260k"));
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->arch, ModelArch::Llama);
    EXPECT_EQ(config->architecture, "LlamaForCausalLM");
    EXPECT_EQ(config->hidden_size, 64);
    EXPECT_EQ(config->intermediate_size, 172);
    EXPECT_EQ(config->num_hidden_layers, 5);
    EXPECT_EQ(config->num_attention_heads, 8);
    EXPECT_EQ(config->num_key_value_heads, 4);
    EXPECT_EQ(config->head_dim, 8);
    EXPECT_EQ(config->vocab_size, 512);
    EXPECT_EQ(config->max_position_embeddings, 512);
    EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-5);
    EXPECT_DOUBLE_EQ(config->rope_theta, 10000.0);
    EXPECT_TRUE(config->tie_word_embeddings);
    EXPECT_FALSE(config->attention_bias);
    EXPECT_FALSE(config->qk_norm);
    EXPECT_EQ(config->torch_dtype, DType::F32);
    EXPECT_EQ(config->bos_token_id, 1);
    EXPECT_EQ(config->eos_token_ids, std::vector<int32_t>{2});
}

TEST(Config, LoadsQwen3Tiny) {
    Result<ModelConfig> config = load_model_config(testdata_path("qwen3-tiny"));
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->arch, ModelArch::Qwen3);
    EXPECT_EQ(config->hidden_size, 128);
    EXPECT_EQ(config->intermediate_size, 384);
    EXPECT_EQ(config->num_hidden_layers, 3);
    EXPECT_EQ(config->num_attention_heads, 8);
    EXPECT_EQ(config->num_key_value_heads, 2);
    EXPECT_EQ(config->head_dim, 32);
    EXPECT_EQ(config->vocab_size, 151936);
    EXPECT_EQ(config->max_position_embeddings, 4096);
    EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-6);
    EXPECT_DOUBLE_EQ(config->rope_theta, 1e6);
    EXPECT_TRUE(config->tie_word_embeddings);
    EXPECT_FALSE(config->attention_bias);
    EXPECT_TRUE(config->qk_norm);
    EXPECT_EQ(config->torch_dtype, DType::BF16);
    EXPECT_EQ(config->bos_token_id, 151643);
    EXPECT_EQ(config->eos_token_ids, std::vector<int32_t>{151645});
}

TEST(Config, LoadsQwen2TinyWithBiasAndExplicitHeadDim) {
    Result<ModelConfig> config = load_model_config(testdata_path("qwen2-tiny"));
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->arch, ModelArch::Qwen2);
    EXPECT_EQ(config->architecture, "Qwen2ForCausalLM");
    EXPECT_EQ(config->num_attention_heads, 8);
    EXPECT_EQ(config->head_dim, 32);  // not hidden / heads = 16
    EXPECT_TRUE(config->attention_bias);
    EXPECT_FALSE(config->qk_norm);
    EXPECT_EQ(config->torch_dtype, DType::BF16);
}

TEST(Config, DefaultsWhenOptionalFieldsAbsent) {
    nlohmann::json json = minimal_config();
    json.erase("num_key_value_heads");
    Result<ModelConfig> config = parse_model_config(json, "x");
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->num_key_value_heads, 4);
    EXPECT_EQ(config->head_dim, 16);
    EXPECT_EQ(config->torch_dtype, DType::F32);
    EXPECT_FALSE(config->bos_token_id.has_value());
    EXPECT_TRUE(config->eos_token_ids.empty());
    EXPECT_FALSE(config->tie_word_embeddings);
}

TEST(Config, EosListAndDtypeAliasAndDefaultRopeScaling) {
    nlohmann::json json = minimal_config();
    json["eos_token_id"] = {151645, 151643};
    json["dtype"] = "float16";
    json["rope_scaling"] = {{"rope_type", "default"}};
    json["attention_bias"] = true;
    Result<ModelConfig> config = parse_model_config(json, "x");
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
    EXPECT_EQ(config->torch_dtype, DType::F16);
    EXPECT_TRUE(config->attention_bias);
}

TEST(Config, ArchitectureFromModelTypeWhenNoArchitectures) {
    nlohmann::json json = minimal_config();
    json.erase("architectures");
    json["model_type"] = "qwen2";
    Result<ModelConfig> config = parse_model_config(json, "x");
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->arch, ModelArch::Qwen2);
    EXPECT_TRUE(config->attention_bias);
}

TEST(Config, RejectsUnsupportedArchitectureAndListsSupported) {
    nlohmann::json json = minimal_config();
    json["architectures"] = {"MistralForCausalLM"};
    expect_config_error(json,
                        {"MistralForCausalLM", "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"});
}

TEST(Config, RejectsMissingRequiredFields) {
    for (const char* field : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                              "vocab_size", "max_position_embeddings"}) {
        nlohmann::json json = minimal_config();
        json.erase(field);
        expect_config_error(json, {"missing required field", field});
    }
    nlohmann::json json = minimal_config();
    json.erase("architectures");
    expect_config_error(json, {"architectures"});
}

TEST(Config, RejectsWrongTypesAndValues) {
    nlohmann::json json = minimal_config();
    json["hidden_size"] = "64";
    expect_config_error(json, {"hidden_size", "integer"});
    json = minimal_config();
    json["num_hidden_layers"] = -2;
    expect_config_error(json, {"num_hidden_layers", "positive"});
    json = minimal_config();
    json["num_key_value_heads"] = 3;
    expect_config_error(json, {"num_key_value_heads"});
    json = minimal_config();
    json["torch_dtype"] = "float8_e4m3fn";
    expect_config_error(json, {"torch_dtype", "float8_e4m3fn"});
    json = minimal_config();
    json["eos_token_id"] = {1, "two"};
    expect_config_error(json, {"eos_token_id"});
    json = minimal_config();
    json["tie_word_embeddings"] = 1;
    expect_config_error(json, {"tie_word_embeddings"});
}

TEST(Config, RejectsRopeScaling) {
    nlohmann::json json = minimal_config();
    json["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    expect_config_error(json, {"rope_scaling", "yarn"});
}

TEST(Config, MissingFolderAndMissingFileAndMalformedJson) {
    Result<ModelConfig> missing = load_model_config("/nonexistent/lmrun_model");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/lmrun_model"), std::string::npos);
    EXPECT_NE(missing.error().message.find("not found"), std::string::npos);

    std::string dir = make_temp_dir("config_missing_file");
    Result<ModelConfig> no_file = load_model_config(dir);
    ASSERT_FALSE(no_file.ok());
    EXPECT_NE(no_file.error().message.find(dir + "/config.json"), std::string::npos)
        << no_file.error().message;

    std::ofstream(dir + "/config.json") << "{\"hidden_size\": 64,";
    Result<ModelConfig> malformed = load_model_config(dir);
    ASSERT_FALSE(malformed.ok());
    EXPECT_NE(malformed.error().message.find(dir + "/config.json"), std::string::npos);
    EXPECT_NE(malformed.error().message.find("malformed JSON"), std::string::npos)
        << malformed.error().message;

    std::ofstream(dir + "/config.json", std::ios::trunc) << "[1, 2]";
    Result<ModelConfig> not_object = load_model_config(dir);
    ASSERT_FALSE(not_object.ok());
    EXPECT_NE(not_object.error().message.find("object"), std::string::npos) << not_object.error().message;
}

TEST(Config, JsonRoundTrip) {
    for (ModelArch arch : {ModelArch::Llama, ModelArch::Qwen2, ModelArch::Qwen3}) {
        ModelConfig config = default_model_config(arch);
        config.hidden_size = 96;
        config.intermediate_size = 200;
        config.num_hidden_layers = 3;
        config.num_attention_heads = 6;
        config.num_key_value_heads = 2;
        config.head_dim = 24;
        config.vocab_size = 1000;
        config.max_position_embeddings = 2048;
        config.rms_norm_eps = 1e-5;
        config.rope_theta = 5e5;
        config.tie_word_embeddings = arch != ModelArch::Llama;
        config.torch_dtype = DType::BF16;
        config.bos_token_id = 7;
        config.eos_token_ids = {8, 9};
        Result<ModelConfig> back = parse_model_config(model_config_to_json(config), "x");
        ASSERT_TRUE(back.ok()) << back.error().message;
        EXPECT_EQ(back->arch, arch);
        EXPECT_EQ(back->architecture, config.architecture);
        EXPECT_EQ(back->hidden_size, 96);
        EXPECT_EQ(back->intermediate_size, 200);
        EXPECT_EQ(back->num_hidden_layers, 3);
        EXPECT_EQ(back->num_attention_heads, 6);
        EXPECT_EQ(back->num_key_value_heads, 2);
        EXPECT_EQ(back->head_dim, 24);
        EXPECT_EQ(back->vocab_size, 1000);
        EXPECT_EQ(back->max_position_embeddings, 2048);
        EXPECT_DOUBLE_EQ(back->rms_norm_eps, 1e-5);
        EXPECT_DOUBLE_EQ(back->rope_theta, 5e5);
        EXPECT_EQ(back->tie_word_embeddings, config.tie_word_embeddings);
        EXPECT_EQ(back->attention_bias, arch == ModelArch::Qwen2);
        EXPECT_EQ(back->qk_norm, arch == ModelArch::Qwen3);
        EXPECT_EQ(back->torch_dtype, DType::BF16);
        EXPECT_EQ(back->bos_token_id, 7);
        EXPECT_EQ(back->eos_token_ids, (std::vector<int32_t>{8, 9}));
    }
}

}  // namespace
}  // namespace lmrun
