#include "model/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "model/safetensors_writer.h"
#include "test_util.h"

namespace lmrun {
namespace {

using testing::make_temp_dir;
using testing::testdata_path;

// The tensor names the README lists for a 3-layer tiny Qwen (tied, so no lm_head).
std::vector<std::string> qwen_tiny_names(bool qk_norm, bool bias) {
    std::vector<std::string> names = {"model.embed_tokens.weight", "model.norm.weight"};
    for (int layer = 0; layer < 3; ++layer) {
        std::string prefix = "model.layers." + std::to_string(layer) + ".";
        for (const char* suffix :
             {"input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
              "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
              "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"})
            names.push_back(prefix + suffix);
        if (qk_norm) {
            names.push_back(prefix + "self_attn.q_norm.weight");
            names.push_back(prefix + "self_attn.k_norm.weight");
        }
        if (bias) {
            for (const char* suffix :
                 {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"})
                names.push_back(prefix + suffix);
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

void expect_bf16_shape(const Checkpoint& checkpoint, const std::string& name, std::vector<int64_t> shape) {
    Result<const TensorInfo*> tensor = checkpoint.get(name);
    ASSERT_TRUE(tensor.ok()) << tensor.error().message;
    EXPECT_EQ((*tensor)->shape, shape) << name;
    EXPECT_EQ((*tensor)->dtype, DType::BF16) << name;
}

TEST(Checkpoint, OpensQwen3Tiny) {
    Result<Checkpoint> checkpoint = Checkpoint::open(testdata_path("qwen3-tiny"));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
    EXPECT_EQ(checkpoint->tensor_names(), qwen_tiny_names(/*qk_norm=*/true, /*bias=*/false));
    EXPECT_EQ(checkpoint->find("lm_head.weight"), nullptr);
    EXPECT_EQ(checkpoint->num_files(), 1u);
    expect_bf16_shape(*checkpoint, "model.embed_tokens.weight", {151936, 128});
    expect_bf16_shape(*checkpoint, "model.layers.2.self_attn.q_proj.weight", {256, 128});
    expect_bf16_shape(*checkpoint, "model.layers.2.self_attn.k_proj.weight", {64, 128});
    expect_bf16_shape(*checkpoint, "model.layers.2.self_attn.v_proj.weight", {64, 128});
    expect_bf16_shape(*checkpoint, "model.layers.2.self_attn.o_proj.weight", {128, 256});
    expect_bf16_shape(*checkpoint, "model.layers.0.self_attn.q_norm.weight", {32});
    expect_bf16_shape(*checkpoint, "model.layers.0.self_attn.k_norm.weight", {32});
    expect_bf16_shape(*checkpoint, "model.layers.1.mlp.gate_proj.weight", {384, 128});
    expect_bf16_shape(*checkpoint, "model.layers.1.mlp.down_proj.weight", {128, 384});
    // Parameter count from the README's table, in BF16 bytes.
    size_t per_layer = 256 * 128 + 2 * 64 * 128 + 128 * 256 + 3 * 384 * 128 + 2 * 128 + 2 * 32;
    EXPECT_EQ(checkpoint->total_nbytes(), 2 * (151936 * 128 + 3 * per_layer + 128));
}

TEST(Checkpoint, OpensQwen2TinyWithBiases) {
    Result<Checkpoint> checkpoint = Checkpoint::open(testdata_path("qwen2-tiny"));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
    EXPECT_EQ(checkpoint->tensor_names(), qwen_tiny_names(/*qk_norm=*/false, /*bias=*/true));
    expect_bf16_shape(*checkpoint, "model.layers.0.self_attn.q_proj.weight", {256, 128});
    expect_bf16_shape(*checkpoint, "model.layers.0.self_attn.q_proj.bias", {256});
    expect_bf16_shape(*checkpoint, "model.layers.0.self_attn.k_proj.bias", {64});
    expect_bf16_shape(*checkpoint, "model.layers.0.self_attn.v_proj.bias", {64});
    EXPECT_EQ(checkpoint->find("model.layers.0.self_attn.o_proj.bias"), nullptr);
}

TEST(Checkpoint, OpensStories260kWithLmHead) {
    std::string dir = testdata_path("stories260k");
    Result<Checkpoint> checkpoint = Checkpoint::open(dir);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
    EXPECT_EQ(checkpoint->tensor_names().size(), 48u);
    ASSERT_NE(checkpoint->find("lm_head.weight"), nullptr);
    EXPECT_EQ(checkpoint->find("lm_head.weight")->shape, (std::vector<int64_t>{512, 64}));
    Result<const TensorInfo*> missing = checkpoint->get("model.layers.9.mlp.up_proj.weight");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().message,
              dir + ": tensor model.layers.9.mlp.up_proj.weight not found in any of the 1 safetensors files");
}

// Two shards and an index, as HF writes them.
std::string make_sharded_dir(const std::string& name, const std::vector<float>& a,
                             const std::vector<float>& b) {
    std::string dir = make_temp_dir(name);
    EXPECT_TRUE(write_safetensors(dir + "/model-00001-of-00002.safetensors",
                                  {{"a", DType::F32, {int64_t(a.size())}, a.data()}})
                    .ok());
    EXPECT_TRUE(write_safetensors(dir + "/model-00002-of-00002.safetensors",
                                  {{"b", DType::F32, {int64_t(b.size())}, b.data()},
                                   {"unlisted", DType::F32, {1}, b.data()}})
                    .ok());
    std::ofstream(dir + "/model.safetensors.index.json")
        << R"({"metadata": {"total_size": 20}, "weight_map": {"a": "model-00001-of-00002.safetensors",
              "b": "model-00002-of-00002.safetensors"}})";
    return dir;
}

TEST(Checkpoint, OpensShardedFolderAndSurvivesMove) {
    std::vector<float> a = {1, 2, 3}, b = {4, 5};
    std::string dir = make_sharded_dir("checkpoint_sharded", a, b);
    Result<Checkpoint> opened = Checkpoint::open(dir);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    Checkpoint checkpoint = std::move(opened).value();
    EXPECT_EQ(checkpoint.num_files(), 2u);
    EXPECT_EQ(checkpoint.tensor_names(), (std::vector<std::string>{"a", "b"}));  // the index is the truth
    EXPECT_EQ(checkpoint.total_nbytes(), 20u);
    const TensorInfo* tensor_b = checkpoint.find("b");
    ASSERT_NE(tensor_b, nullptr);
    EXPECT_EQ(tensor_b->file_path, dir + "/model-00002-of-00002.safetensors");
    EXPECT_EQ(std::memcmp(tensor_b->data, b.data(), 8), 0);
    EXPECT_EQ(std::memcmp(checkpoint.find("a")->data, a.data(), 12), 0);
    Result<const TensorInfo*> missing = checkpoint.get("c");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().message, dir + ": tensor c not found in any of the 2 safetensors files");
}

void expect_checkpoint_open_error(const std::string& dir, std::initializer_list<std::string> needles) {
    Result<Checkpoint> checkpoint = Checkpoint::open(dir);
    ASSERT_FALSE(checkpoint.ok());
    for (const std::string& needle : needles)
        EXPECT_NE(checkpoint.error().message.find(needle), std::string::npos) << checkpoint.error().message;
}

TEST(Checkpoint, RejectsMissingFolder) {
    expect_checkpoint_open_error("/nonexistent/lmrun_ckpt", {"/nonexistent/lmrun_ckpt", "not found"});
}

TEST(Checkpoint, RejectsFolderWithoutWeights) {
    std::string dir = make_temp_dir("checkpoint_no_weights");
    expect_checkpoint_open_error(
        dir, {dir, "no weights file", "model.safetensors", "model.safetensors.index.json"});
}

TEST(Checkpoint, RejectsCorruptSingleFileNamingIt) {
    std::string dir = make_temp_dir("checkpoint_corrupt");
    std::ofstream(dir + "/model.safetensors") << "abc";
    expect_checkpoint_open_error(dir, {dir + "/model.safetensors", "shorter than the 8-byte"});
}

TEST(Checkpoint, RejectsMalformedIndex) {
    std::string dir = make_sharded_dir("checkpoint_bad_index", {1}, {2});
    std::string index = dir + "/model.safetensors.index.json";
    std::ofstream(index, std::ios::trunc) << R"({"weight_map": {"a": )";
    expect_checkpoint_open_error(dir, {index, "malformed JSON"});
    std::ofstream(index, std::ios::trunc) << R"({"metadata": {}})";
    expect_checkpoint_open_error(dir, {index, "weight_map"});
    std::ofstream(index, std::ios::trunc) << R"({"weight_map": {"a": 3}})";
    expect_checkpoint_open_error(dir, {index, "'a'"});
    std::ofstream(index, std::ios::trunc)
        << R"({"weight_map": {"a": "../model-00001-of-00002.safetensors"}})";
    expect_checkpoint_open_error(dir, {index, "invalid shard"});
}

TEST(Checkpoint, RejectsIndexNamingMissingShard) {
    std::string dir = make_sharded_dir("checkpoint_missing_shard", {1}, {2});
    std::filesystem::remove(dir + "/model-00002-of-00002.safetensors");
    expect_checkpoint_open_error(dir, {dir + "/model.safetensors.index.json",
                                       "model-00002-of-00002.safetensors", "'b'", "does not exist"});
}

TEST(Checkpoint, RejectsIndexNamingTensorAbsentFromItsShard) {
    std::string dir = make_sharded_dir("checkpoint_absent_tensor", {1}, {2});
    std::ofstream(dir + "/model.safetensors.index.json", std::ios::trunc)
        << R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors"}})";
    expect_checkpoint_open_error(dir, {dir + "/model.safetensors.index.json", "'b'",
                                       "model-00001-of-00002.safetensors", "no such tensor"});
}

}  // namespace
}  // namespace lmrun
