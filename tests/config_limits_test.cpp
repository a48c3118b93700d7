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

nlohmann::json stories_config_json() {
    return testing::read_json_file(testdata_path("stories260k/config.json"));
}

Error parse_error_with(const std::string& field, nlohmann::json value) {
    nlohmann::json json = stories_config_json();
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
        nlohmann::json json = stories_config_json();
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
    nlohmann::json json = stories_config_json();
    json["num_attention_heads"] = 256;
    json["num_key_value_heads"] = 2;
    json["head_dim"] = 8;
    Result<ModelConfig> config = parse_model_config(json, "m/config.json");
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.error().message.find("128 query heads per KV head"), std::string::npos)
        << config.error().message;
}

TEST(ConfigLimits, NonFiniteNumbersAreRejected) {
    nlohmann::json json = stories_config_json();
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

ModelConfig llama_70b_config() {
    ModelConfig config = default_model_config(ModelArch::Llama);
    config.hidden_size = 8192;
    config.intermediate_size = 28672;
    config.num_hidden_layers = 80;
    config.num_attention_heads = 64;
    config.num_key_value_heads = 8;
    config.head_dim = 128;
    config.vocab_size = 128256;
    config.max_position_embeddings = 131072;
    config.tie_word_embeddings = false;
    return config;
}

constexpr double kGiB = double(int64_t(1) << 30);

ModelMemoryLayout bf16_layout() {
    return ModelMemoryLayout{.weight_dtype = DType::BF16};
}

// Every linear layer int8, as --quantization int8 makes them (embeddings too unless kept).
ModelMemoryLayout int8_layout(const ModelConfig& config, bool quantize_embeddings = true) {
    ModelMemoryLayout layout = bf16_layout();
    layout.int8_qkv_layers = layout.int8_o_layers = config.num_hidden_layers;
    layout.int8_gate_up_layers = layout.int8_down_layers = config.num_hidden_layers;
    layout.int8_lm_head = layout.int8_embedding = quantize_embeddings;
    return layout;
}

TEST(ConfigLimits, ModelLargerThanAvailableMemoryNamesBothFigures) {
    const ModelConfig config = llama_70b_config();
    const int64_t available = int64_t(22.1 * kGiB);  // injected, not this machine's
    Status status = check_model_fits_memory(config, bf16_layout(), available, "llama70b/config.json");
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().message,
              "llama70b/config.json: the model needs 131.5 GiB for its BF16 weights, 22.1 GiB "
              "available");
    EXPECT_EQ(status.error().kind, ErrorKind::ResourceExhausted);
    EXPECT_EQ(status.error().subject, "llama70b/config.json");
    EXPECT_TRUE(check_model_fits_memory(config, bf16_layout(), int64_t(200) << 30, "x").ok());
}

TEST(ConfigLimits, Int8LayersCountAByteAPerWeightPlusRowScales) {
    const ModelConfig config = qwen3_0_6b_config();
    // Qwen3-0.6B per layer: q 2048 + k 1024 + v 1024 rows of 1024; o 1024 x 2048; gate/up 2 x 3072
    // rows of 1024; down 1024 x 3072. Written out, not from the code under test.
    const double layer_weights = 4096.0 * 1024 + 1024.0 * 2048 + 6144.0 * 1024 + 1024.0 * 3072;
    const double layer_rows = 4096.0 + 1024 + 6144 + 1024;  // one float scale per output row
    const double embedding = 151936.0 * 1024;               // tied: one table
    const double bf16 = model_memory_bytes(config, DType::BF16);
    const double f32_rest = bf16 - (28 * layer_weights + embedding) * 2;  // norms and RoPE table
    EXPECT_DOUBLE_EQ(rank_model_memory_bytes(config, int8_layout(config)),
                     28 * (layer_weights + layer_rows * 4) + embedding + 151936.0 * 4 + f32_rest);
    // --unquantized-embeddings: the table stays BF16.
    EXPECT_DOUBLE_EQ(rank_model_memory_bytes(config, int8_layout(config, false)),
                     28 * (layer_weights + layer_rows * 4) + embedding * 2 + f32_rest);
    // An int8 checkpoint that ignores some layers: those stay BF16.
    ModelMemoryLayout partial = int8_layout(config, false);
    partial.int8_down_layers = 20;
    EXPECT_DOUBLE_EQ(rank_model_memory_bytes(config, partial),
                     rank_model_memory_bytes(config, int8_layout(config, false)) +
                         8 * (1024.0 * 3072 * 2 - (1024.0 * 3072 + 1024 * 4)));
}

TEST(ConfigLimits, Qwen3ThatFailsInBf16FitsInInt8) {
    const ModelConfig config = qwen3_0_6b_config();
    const int64_t available = int64_t(1.0 * kGiB);
    Status bf16 = check_model_fits_memory(config, bf16_layout(), available, "qwen3/config.json");
    ASSERT_FALSE(bf16.ok());
    EXPECT_EQ(bf16.error().message,
              "qwen3/config.json: the model needs 1.1 GiB for its BF16 weights, 1.0 GiB available");
    EXPECT_TRUE(check_model_fits_memory(config, int8_layout(config), available, "qwen3/config.json").ok());
    // The message names int8 when int8 still does not fit.
    Status tight =
        check_model_fits_memory(config, int8_layout(config), int64_t(0.5 * kGiB), "qwen3/config.json");
    ASSERT_FALSE(tight.ok());
    EXPECT_EQ(tight.error().message,
              "qwen3/config.json: the model needs 0.6 GiB for its int8 and BF16 weights, 0.5 GiB available");
}

TEST(ConfigLimits, TensorParallelRanksHoldTheirShards) {
    const ModelConfig config = llama_70b_config();
    ModelMemoryLayout tp4 = bf16_layout();
    tp4.tp_size = 4;
    // Llama-70B's 8 KV heads split 2 per rank, so every sharded part is 1/4: the shard is a
    // quarter of the whole, plus three quarters of what every rank holds whole (norms, RoPE).
    const double whole = model_memory_bytes(config, DType::BF16);
    const double replicated = (80.0 * 2 * 8192 + 8192) * 4 + 131072.0 * 128 * 4;
    EXPECT_DOUBLE_EQ(rank_model_memory_bytes(config, tp4), (whole - replicated) / 4 + replicated);

    // 4 ranks on 4 machines (mpi, one rank per node): each machine needs 1/4 of the model.
    const int64_t available = int64_t(40 * kGiB);
    EXPECT_FALSE(check_model_fits_memory(config, bf16_layout(), available, "x").ok());
    tp4.ranks_sharing_memory = 1;
    EXPECT_TRUE(check_model_fits_memory(config, tp4, available, "x").ok());
    // 4 ranks on one machine (mp): the shards add up to the whole model again, plus 3 more
    // copies of the replicated parts (the 64 MiB RoPE table dominates): 131.5 -> 131.7 GiB.
    tp4.ranks_sharing_memory = 4;
    Status shared = check_model_fits_memory(config, tp4, available, "llama70b/config.json");
    ASSERT_FALSE(shared.ok());
    EXPECT_EQ(shared.error().message,
              "llama70b/config.json: the model needs 131.7 GiB for its BF16 weights, 4 ranks on this machine "
              "holding 1/4 of it each, 40.0 GiB available");
    // Two nodes of two ranks, and int8: fits in 40 GiB per node.
    ModelMemoryLayout int8_tp4 = int8_layout(config);
    int8_tp4.tp_size = 4;
    int8_tp4.ranks_sharing_memory = 2;
    EXPECT_TRUE(check_model_fits_memory(config, int8_tp4, available, "x").ok());
    int8_tp4.ranks_sharing_memory = 4;
    EXPECT_FALSE(check_model_fits_memory(config, int8_tp4, available, "x").ok());
}

TEST(ConfigLimits, FewerKvHeadsThanRanksAreReplicatedAndTheVocabPadded) {
    ModelConfig config = qwen3_0_6b_config();  // 8 KV heads, vocab 151936
    ModelMemoryLayout tp16 = bf16_layout();
    tp16.tp_size = 16;
    ModelMemoryLayout tp8 = bf16_layout();
    tp8.tp_size = 8;
    // At 16 ranks each holds one KV head (replicated), as at 8, while its q/o/MLP/vocab share
    // halves: tp8 - tp16 is half of tp8's q/o/MLP bytes plus the vocabulary difference.
    const double tp8_bytes = rank_model_memory_bytes(config, tp8);
    const double tp16_bytes = rank_model_memory_bytes(config, tp16);
    const double q_o_mlp_tp8 = 28.0 * (256 * 1024 + 1024 * 256 + 3 * 384 * 1024) * 2;
    const double vocab_tp8 = 18992.0 * 1024 * 2;  // 151936 / 8 rows, tied: one table
    const double vocab_tp16 = 9496.0 * 1024 * 2;  // 151936 / 16
    EXPECT_DOUBLE_EQ(tp8_bytes - tp16_bytes, q_o_mlp_tp8 / 2 + vocab_tp8 - vocab_tp16);
    // A vocabulary that does not divide: the last shard is padded to ceil(vocab / tp) rows.
    config.vocab_size = 151937;
    EXPECT_DOUBLE_EQ(rank_model_memory_bytes(config, tp8) - tp8_bytes, 1024.0 * 2);
}

}  // namespace
}  // namespace lmrun
