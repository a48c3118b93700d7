#include "model/random_checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "model/checkpoint.h"
#include "test_util.h"

namespace lmrun {
namespace {

using testing::make_temp_dir;

ModelConfig small_model_config(ModelArch arch) {
    ModelConfig config = default_model_config(arch);
    config.hidden_size = 32;
    config.intermediate_size = 48;
    config.num_hidden_layers = 2;
    config.num_attention_heads = 4;
    config.num_key_value_heads = 2;
    config.head_dim = 16;  // != hidden / heads on purpose
    config.vocab_size = 300;
    config.max_position_embeddings = 128;
    config.tie_word_embeddings = arch != ModelArch::Llama;
    config.bos_token_id = 1;
    config.eos_token_ids = {2, 3};
    return config;
}

// The names HF uses for the arch, written out by hand.
std::vector<std::string> expected_names(ModelArch arch) {
    std::vector<std::string> names = {"model.embed_tokens.weight", "model.norm.weight"};
    if (arch == ModelArch::Llama) names.push_back("lm_head.weight");
    for (int layer = 0; layer < 2; ++layer) {
        std::string p = "model.layers." + std::to_string(layer) + ".";
        for (const char* suffix :
             {"input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
              "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
              "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"})
            names.push_back(p + suffix);
        if (arch == ModelArch::Qwen2)
            for (const char* suffix :
                 {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"})
                names.push_back(p + suffix);
        if (arch == ModelArch::Qwen3)
            for (const char* suffix : {"self_attn.q_norm.weight", "self_attn.k_norm.weight"})
                names.push_back(p + suffix);
    }
    std::sort(names.begin(), names.end());
    return names;
}

void expect_shape_and_dtype(const Checkpoint& checkpoint, const std::string& name, std::vector<int64_t> shape,
                            DType dtype) {
    const TensorInfo* tensor = checkpoint.find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->shape, shape) << name;
    EXPECT_EQ(tensor->dtype, dtype) << name;
}

class RandomCheckpointArch : public ::testing::TestWithParam<ModelArch> {};

TEST_P(RandomCheckpointArch, SingleAndShardedRoundTrip) {
    ModelArch arch = GetParam();
    std::string base = make_temp_dir(fmt::format("random_ckpt_{}", model_type_name(arch)));
    RandomCheckpointOptions options;
    options.config = small_model_config(arch);
    options.seed = 5;
    ASSERT_TRUE(write_random_checkpoint(base + "/single", options).ok());
    options.max_shard_bytes = 8000;  // the 300x32 BF16 embedding alone is 19200 bytes
    Status status = write_random_checkpoint(base + "/sharded", options);
    ASSERT_TRUE(status.ok()) << status.error().message;

    Result<ModelConfig> config = load_model_config(base + "/sharded");
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->arch, arch);
    EXPECT_EQ(config->head_dim, 16);
    EXPECT_EQ(config->num_key_value_heads, 2);
    EXPECT_EQ(config->vocab_size, 300);
    EXPECT_EQ(config->torch_dtype, DType::BF16);
    EXPECT_EQ(config->eos_token_ids, (std::vector<int32_t>{2, 3}));

    Result<Checkpoint> single = Checkpoint::open(base + "/single");
    Result<Checkpoint> sharded = Checkpoint::open(base + "/sharded");
    ASSERT_TRUE(single.ok()) << single.error().message;
    ASSERT_TRUE(sharded.ok()) << sharded.error().message;
    EXPECT_EQ(single->num_files(), 1u);
    EXPECT_GT(sharded->num_files(), 2u);
    EXPECT_TRUE(std::filesystem::exists(base + "/sharded/model.safetensors.index.json"));
    EXPECT_EQ(single->tensor_names(), expected_names(arch));
    EXPECT_EQ(sharded->tensor_names(), expected_names(arch));
    for (const std::string& name : single->tensor_names()) {
        const TensorInfo* a = single->find(name);
        const TensorInfo* b = sharded->find(name);
        ASSERT_EQ(a->nbytes, b->nbytes) << name;
        EXPECT_EQ(std::memcmp(a->data, b->data, a->nbytes), 0) << name;  // same seed, same values
    }
    const Checkpoint& c = *single;
    expect_shape_and_dtype(c, "model.embed_tokens.weight", {300, 32}, DType::BF16);
    expect_shape_and_dtype(c, "model.layers.1.self_attn.q_proj.weight", {64, 32}, DType::BF16);
    expect_shape_and_dtype(c, "model.layers.1.self_attn.k_proj.weight", {32, 32}, DType::BF16);
    expect_shape_and_dtype(c, "model.layers.1.self_attn.v_proj.weight", {32, 32}, DType::BF16);
    expect_shape_and_dtype(c, "model.layers.1.self_attn.o_proj.weight", {32, 64}, DType::BF16);
    expect_shape_and_dtype(c, "model.layers.1.mlp.gate_proj.weight", {48, 32}, DType::BF16);
    expect_shape_and_dtype(c, "model.layers.1.mlp.down_proj.weight", {32, 48}, DType::BF16);
    expect_shape_and_dtype(c, "model.layers.0.input_layernorm.weight", {32}, DType::BF16);
    if (arch == ModelArch::Qwen2)
        expect_shape_and_dtype(c, "model.layers.0.self_attn.k_proj.bias", {32}, DType::BF16);
    if (arch == ModelArch::Qwen3)
        expect_shape_and_dtype(c, "model.layers.0.self_attn.q_norm.weight", {16}, DType::BF16);
    if (arch == ModelArch::Llama) expect_shape_and_dtype(c, "lm_head.weight", {300, 32}, DType::BF16);
}

INSTANTIATE_TEST_SUITE_P(AllArchs, RandomCheckpointArch,
                         ::testing::Values(ModelArch::Llama, ModelArch::Qwen2, ModelArch::Qwen3));

// Mean and standard deviation of an F32 tensor.
std::pair<double, double> moments(const TensorInfo& tensor) {
    std::vector<float> values(size_t(tensor.numel()));
    std::memcpy(values.data(), tensor.data, tensor.nbytes);
    double sum = 0, sum_sq = 0;
    for (float v : values) sum += v;
    double mean = sum / double(values.size());
    for (float v : values) sum_sq += (v - mean) * (v - mean);
    return {mean, std::sqrt(sum_sq / double(values.size()))};
}

TEST(RandomCheckpoint, ValuesHaveRequestedStatisticsAndDependOnSeed) {
    std::string base = make_temp_dir("random_ckpt_stats");
    RandomCheckpointOptions options;
    options.config = small_model_config(ModelArch::Qwen3);
    options.config.vocab_size = 4000;  // 128k samples in the embedding
    options.dtype = DType::F32;
    options.std = 0.5f;
    options.seed = 1;
    ASSERT_TRUE(write_random_checkpoint(base + "/a", options).ok());
    ASSERT_TRUE(write_random_checkpoint(base + "/b", options).ok());
    options.seed = 2;
    ASSERT_TRUE(write_random_checkpoint(base + "/c", options).ok());
    Result<Checkpoint> a = Checkpoint::open(base + "/a");
    Result<Checkpoint> b = Checkpoint::open(base + "/b");
    Result<Checkpoint> c = Checkpoint::open(base + "/c");
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(load_model_config(base + "/a")->torch_dtype, DType::F32);

    const TensorInfo* embed = a->find("model.embed_tokens.weight");
    ASSERT_EQ(embed->dtype, DType::F32);
    auto [mean, stddev] = moments(*embed);
    EXPECT_NEAR(mean, 0.0, 0.01);
    EXPECT_NEAR(stddev, 0.5, 0.01);
    auto [norm_mean, norm_std] = moments(*a->find("model.layers.0.input_layernorm.weight"));
    EXPECT_NEAR(norm_mean, 1.0, 0.3);
    EXPECT_GT(norm_std, 0.2);  // "1 + noise", not exactly 1
    EXPECT_LT(norm_std, 0.9);

    EXPECT_EQ(std::memcmp(embed->data, b->find("model.embed_tokens.weight")->data, embed->nbytes), 0);
    EXPECT_NE(std::memcmp(embed->data, c->find("model.embed_tokens.weight")->data, embed->nbytes), 0);
    // Distinct tensors of the same shape get distinct values.
    const TensorInfo* gate = a->find("model.layers.0.mlp.gate_proj.weight");
    const TensorInfo* up = a->find("model.layers.0.mlp.up_proj.weight");
    EXPECT_NE(std::memcmp(gate->data, up->data, gate->nbytes), 0);
}

TEST(RandomCheckpoint, SwitchingFromShardedToSingleFileLeavesNoStaleIndex) {
    std::string dir = make_temp_dir("random_ckpt_restale");
    RandomCheckpointOptions options;
    options.config = small_model_config(ModelArch::Qwen3);
    options.max_shard_bytes = 8000;
    ASSERT_TRUE(write_random_checkpoint(dir, options).ok());
    options.max_shard_bytes = 0;
    options.config.num_hidden_layers = 1;
    ASSERT_TRUE(write_random_checkpoint(dir, options).ok());
    Result<Checkpoint> checkpoint = Checkpoint::open(dir);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
    EXPECT_EQ(checkpoint->num_files(), 1u);
    EXPECT_EQ(checkpoint->find("model.layers.1.mlp.up_proj.weight"), nullptr);
}

TEST(RandomCheckpoint, RejectsInvalidConfig) {
    RandomCheckpointOptions options;
    options.config = small_model_config(ModelArch::Llama);
    options.config.num_key_value_heads = 3;
    Status status = write_random_checkpoint(make_temp_dir("random_ckpt_invalid"), options);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("num_key_value_heads"), std::string::npos)
        << status.error().message;
}

TEST(RandomCheckpoint, Qwen3_0_6bShape) {
    ModelConfig config = qwen3_0_6b_config();
    EXPECT_EQ(config.arch, ModelArch::Qwen3);
    EXPECT_EQ(config.architecture, "Qwen3ForCausalLM");
    EXPECT_TRUE(config.qk_norm);
    EXPECT_FALSE(config.attention_bias);
    size_t num_params = 0, num_embedding_params = 0;
    for (const TensorToWrite& tensor : hf_checkpoint_layout(config, DType::BF16)) {
        size_t count = tensor_nbytes(tensor.dtype, tensor.shape) / 2;
        num_params += count;
        if (tensor.name == "model.embed_tokens.weight") num_embedding_params = count;
    }
    // Qwen3-0.6B model card: 0.6B parameters, 0.44B non-embedding.
    EXPECT_EQ(num_embedding_params, 151936u * 1024u);
    EXPECT_NEAR(double(num_params - num_embedding_params) / 1e9, 0.44, 0.005);
    EXPECT_NEAR(double(num_params) / 1e9, 0.6, 0.01);
}

}  // namespace
}  // namespace lmrun
