// Issue 10, item 10: a config.json that asks for more than lmrun can run or the machine
// can hold is a clear error naming the file and the field (never a CHECK abort or an
// allocation of tens of GB).
#include "model/config_limits.h"

#include <gtest/gtest.h>

#include <limits>

#include "model/random_checkpoint.h"
#include "test_util.h"

namespace lmrun {
namespace {

using testing::testdata_path;

nlohmann::json stories_config() {
    return testing::read_json_file(testdata_path("stories260k/config.json"));
}

Error parse_error_with(const std::string& field, nlohmann::json value) {
    nlohmann::json json = stories_config();
    json[field] = std::move(value);
    Result<ModelConfig> config = parse_model_config(json, "m/config.json");
    EXPECT_FALSE(config.ok()) << field;
    return config.ok() ? Error{} : config.error();
}

TEST(ConfigLimits, HeadDim512IsUnsupportedNotACheckAbort) {
    Error error = parse_error_with("head_dim", 512);
    EXPECT_EQ(error.message,
              "m/config.json: unsupported head_dim 512 (supported: even values from 2 to 256)");
    EXPECT_EQ(error.kind, ErrorKind::Unsupported);
    EXPECT_EQ(error.subject, "m/config.json");
    EXPECT_NE(parse_error_with("head_dim", 7).message.find("unsupported head_dim 7"), std::string::npos);
}

TEST(ConfigLimits, HugeSizesNameTheFieldAndTheLimit) {
    const std::pair<const char*, int64_t> cases[] = {
        {"vocab_size", 1000000000},       {"hidden_size", 1000000},
        {"intermediate_size", 100000000}, {"num_hidden_layers", 1000000},
        {"num_attention_heads", 1000000}, {"max_position_embeddings", 1000000000},
    };
    for (const auto& [field, value] : cases) {
        nlohmann::json json = stories_config();
        json[field] = value;
        if (std::string(field) == "num_attention_heads") json["num_key_value_heads"] = value;
        Result<ModelConfig> config = parse_model_config(json, "m/config.json");
        ASSERT_FALSE(config.ok()) << field;
        EXPECT_NE(
            config.error().message.find(fmt::format("m/config.json: field '{}' = {} is larger than lmrun "
                                                    "supports (at most ",
                                                    field, value)),
            std::string::npos)
            << config.error().message;
        EXPECT_EQ(config.error().kind, ErrorKind::Unsupported) << field;
    }
}

TEST(ConfigLimits, GqaGroupsLargerThanATileAreUnsupported) {
    nlohmann::json json = stories_config();
    json["num_attention_heads"] = 256;
    json["num_key_value_heads"] = 2;
    json["head_dim"] = 8;
    Result<ModelConfig> config = parse_model_config(json, "m/config.json");
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.error().message.find("128 query heads per KV head"), std::string::npos)
        << config.error().message;
}

TEST(ConfigLimits, NonFiniteNumbersAreRejected) {
    nlohmann::json json = stories_config();
    json["rope_theta"] = std::numeric_limits<double>::infinity();  // text JSON cannot say this; a DOM can
    Result<ModelConfig> config = parse_model_config(json, "m/config.json");
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.error().message.find("'rope_theta' must be a positive finite number"), std::string::npos)
        << config.error().message;
}

TEST(ConfigLimits, MemoryOfQwen3ShapedModel) {
    // Qwen3-0.6B (the random checkpoint's preset): 0.44 B non-embedding + 0.155 B embedding
    // parameters (tied), 40960 positions. The figures below are the published shape's, written
    // out, so that a change to the preset shows here too.
    const ModelConfig config = qwen3_0_6b_config();
    const double params =
        28.0 * ((16 + 16) * 128 * 1024 + 1024 * 16 * 128 + 3 * 3072 * 1024) + 151936.0 * 1024;
    const double f32 = (28.0 * (2 * 1024 + 2 * 128) + 1024) * 4 + 40960.0 * 128 * 4;
    EXPECT_DOUBLE_EQ(model_memory_bytes(config, DType::BF16), params * 2 + f32);
    EXPECT_DOUBLE_EQ(model_memory_bytes(config, DType::F32), params * 4 + f32);
}

TEST(ConfigLimits, ModelLargerThanAvailableMemoryNamesBothFigures) {
    ModelConfig config = default_model_config(ModelArch::Llama);
    config.hidden_size = 8192;
    config.intermediate_size = 28672;
    config.num_hidden_layers = 80;
    config.num_attention_heads = 64;
    config.num_key_value_heads = 8;
    config.head_dim = 128;
    config.vocab_size = 128256;
    config.max_position_embeddings = 131072;
    const int64_t available = int64_t(22.1 * double(int64_t(1) << 30));  // injected, not this machine's
    Status status = check_model_fits_memory(config, DType::BF16, available, "llama70b/config.json");
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().message,
              "llama70b/config.json: the model needs 131.5 GiB for its BF16 weights, 22.1 GiB "
              "available");
    EXPECT_EQ(status.error().kind, ErrorKind::ResourceExhausted);
    EXPECT_EQ(status.error().subject, "llama70b/config.json");
    EXPECT_TRUE(check_model_fits_memory(config, DType::BF16, int64_t(200) << 30, "x").ok());
}

}  // namespace
}  // namespace lmrun
