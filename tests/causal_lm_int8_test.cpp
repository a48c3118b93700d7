// int8 weights end to end: compressed-tensors int8 W8A8 checkpoints written by the random-model
// writer (single file and sharded, tied and untied embeddings, per-channel and per-tensor
// scales) load and compute exactly what quantizing the float checkpoint at load computes;
// unsupported or inconsistent checkpoints are errors; int8 logits track BF16 logits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/model_runner.h"
#include "model/checkpoint.h"
#include "model/random_checkpoint.h"
#include "numeric_test_util.h"
#include "runner_test_util.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

ModelConfig tiny_config(ModelArch arch, bool tied) {
    ModelConfig config = default_model_config(arch);
    config.hidden_size = 96;
    config.intermediate_size = 160;
    config.num_hidden_layers = 2;
    config.num_attention_heads = 4;
    config.num_key_value_heads = 2;
    config.head_dim = 32;
    config.vocab_size = 500;
    config.max_position_embeddings = 256;
    config.tie_word_embeddings = tied;
    config.bos_token_id = 1;
    config.eos_token_ids = {2};
    return config;
}

ModelRunnerConfig runner_config() {
    ModelRunnerConfig config;
    config.max_num_seqs = 8;
    config.max_num_batched_tokens = 64;
    config.max_model_len = 64;
    config.block_size = 16;
    config.kv_cache_memory_bytes = 16 << 20;
    return config;
}

const std::vector<int32_t> kPrompt = {1, 17, 400, 33, 250, 9, 77, 123, 5, 301, 42, 8};

// Logits at the last 8 positions of kPrompt, [8, vocab].
std::vector<float> prompt_logits(ModelRunner& runner) {
    std::vector<int32_t> blocks = {0};
    RunnerSequence seq{kPrompt, blocks, 0, int64_t(kPrompt.size()), true, {}};
    std::vector<int32_t> rows;
    for (int32_t r = int32_t(kPrompt.size()) - 8; r < int32_t(kPrompt.size()); ++r) rows.push_back(r);
    auto logits = runner.compute_logits_at(seq, rows);
    return std::vector<float>(logits.begin(), logits.end());
}

std::string write_checkpoint(const std::string& dir, const ModelConfig& config,
                             std::optional<RandomInt8Options> int8, int64_t shard_bytes = 0) {
    RandomCheckpointOptions options;
    options.config = config;
    options.seed = 11;
    options.std = 0.05f;
    options.max_shard_bytes = shard_bytes;
    options.int8 = std::move(int8);
    Status status = write_random_checkpoint(dir, options);
    if (!status.ok()) throw std::runtime_error(status.error().message);
    return dir;
}

struct Layout {
    const char* name;
    ModelArch arch;
    bool tied;
    int64_t shard_bytes;
};

class Int8Checkpoint : public ::testing::TestWithParam<Layout> {};

// The checkpoint's int8 values are the float checkpoint's weights quantized with the kernels'
// rule, and its scales are F32: loading it must give bit-identical logits to quantizing the float
// checkpoint at load (embedding and LM head left in BF16 on both sides).
TEST_P(Int8Checkpoint, MatchesQuantizingTheFloatCheckpointAtLoad) {
    const Layout layout = GetParam();
    const std::string base = make_temp_dir(std::string("int8_ckpt_") + layout.name);
    const ModelConfig config = tiny_config(layout.arch, layout.tied);
    write_checkpoint(base + "/float", config, std::nullopt);
    write_checkpoint(base + "/int8", config, RandomInt8Options{}, layout.shard_bytes);
    if (layout.shard_bytes > 0) {
        auto checkpoint = Checkpoint::open(base + "/int8");
        ASSERT_TRUE(checkpoint.ok());
        EXPECT_GT(checkpoint->num_files(), 2u);
    }

    WeightQuantization at_load;
    at_load.int8_at_load = true;
    at_load.quantize_embeddings = false;
    auto quantized_at_load = make_runner(base + "/float", DType::BF16, runner_config(), at_load);
    auto from_checkpoint = make_runner(base + "/int8", DType::BF16, runner_config());
    auto unquantized = make_runner(base + "/float", DType::BF16, runner_config());
    EXPECT_TRUE(from_checkpoint->model().has_int8_weights());
    EXPECT_FALSE(unquantized->model().has_int8_weights());
    EXPECT_EQ(from_checkpoint->model().weight_nbytes(), quantized_at_load->model().weight_nbytes());
    EXPECT_LT(from_checkpoint->model().weight_nbytes(), unquantized->model().weight_nbytes());

    std::vector<float> want = prompt_logits(*quantized_at_load);
    std::vector<float> got = prompt_logits(*from_checkpoint);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
    // And int8 tracks the float model.
    std::vector<float> reference = prompt_logits(*unquantized);
    const size_t vocab = size_t(config.vocab_size);
    for (size_t row = 0; row < 8; ++row)
        EXPECT_GT(correlation(std::span(&got[row * vocab], vocab), std::span(&reference[row * vocab], vocab)),
                  0.99)
            << row;
}

INSTANTIATE_TEST_SUITE_P(Layouts, Int8Checkpoint,
                         ::testing::Values(Layout{"qwen3_tied", ModelArch::Qwen3, true, 0},
                                           Layout{"qwen3_tied_sharded", ModelArch::Qwen3, true, 30000},
                                           Layout{"llama_untied", ModelArch::Llama, false, 0},
                                           Layout{"qwen2_untied_sharded", ModelArch::Qwen2, false, 30000}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Int8CheckpointVariants, PerTensorScalesBf16ScalesAndIgnoredLayersLoad) {
    const std::string base = make_temp_dir("int8_ckpt_variants");
    const ModelConfig config = tiny_config(ModelArch::Llama, false);
    write_checkpoint(base + "/float", config, std::nullopt);
    auto reference_runner = make_runner(base + "/float", DType::BF16, runner_config());
    std::vector<float> reference = prompt_logits(*reference_runner);
    const size_t vocab = size_t(config.vocab_size);

    RandomInt8Options per_tensor;
    per_tensor.strategy = ScaleStrategy::Tensor;
    RandomInt8Options bf16_scales;
    bf16_scales.scale_dtype = DType::BF16;
    RandomInt8Options head_and_mixed;  // lm_head int8 too, down_proj left in BF16
    head_and_mixed.ignore = {"re:.*down_proj"};
    RandomInt8Options channel;
    for (const auto& [name, options] :
         std::vector<std::pair<std::string, RandomInt8Options>>{{"channel", channel},
                                                                {"tensor", per_tensor},
                                                                {"bf16_scales", bf16_scales},
                                                                {"mixed", head_and_mixed}}) {
        write_checkpoint(base + "/" + name, config, options);
        auto runner = make_runner(base + "/" + name, DType::BF16, runner_config());
        EXPECT_TRUE(runner->model().has_int8_weights()) << name;
        std::vector<float> got = prompt_logits(*runner);
        for (size_t row = 0; row < 8; ++row)
            EXPECT_GT(
                correlation(std::span(&got[row * vocab], vocab), std::span(&reference[row * vocab], vocab)),
                0.98)
                << name << " " << row;
        if (name == "mixed") {
            auto checkpoint = Checkpoint::open(base + "/" + name);
            ASSERT_TRUE(checkpoint.ok());
            EXPECT_EQ(checkpoint->find("lm_head.weight")->dtype, DType::I8);
            EXPECT_NE(checkpoint->find("lm_head.weight_scale"), nullptr);
            EXPECT_EQ(checkpoint->find("model.layers.1.mlp.down_proj.weight")->dtype, DType::BF16);
            EXPECT_EQ(checkpoint->find("model.layers.1.mlp.down_proj.weight_scale"), nullptr);
        }
    }
}

void rewrite_config(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json json = read_json_file(dir + "/config.json");
    edit(json);
    std::ofstream(dir + "/config.json") << json.dump(2);
}

std::string load_error(const std::string& dir) {
    auto config = load_model_config(dir);
    if (!config.ok()) return config.error().message;
    auto model = CausalLM::load(dir, config.value(), DType::BF16);
    return model.ok() ? "" : model.error().message;
}

TEST(Int8CheckpointErrors, InconsistentCheckpointsAreErrorsNamingTheTensor) {
    const std::string base = make_temp_dir("int8_ckpt_errors");
    const ModelConfig config = tiny_config(ModelArch::Qwen3, true);
    // int8 tensors but no quantization_config.
    write_checkpoint(base + "/no_config", config, RandomInt8Options{});
    rewrite_config(base + "/no_config", [](nlohmann::json& json) { json.erase("quantization_config"); });
    std::string error = load_error(base + "/no_config");
    EXPECT_NE(error.find("q_proj.weight"), std::string::npos) << error;
    EXPECT_NE(error.find("int8"), std::string::npos) << error;
    // quantization_config says int8, the tensors are BF16.
    write_checkpoint(base + "/float_tensors", config, std::nullopt);
    rewrite_config(base + "/float_tensors", [](nlohmann::json& json) {
        json["quantization_config"] =
            compressed_tensors_config_to_json({ScaleStrategy::Channel, {"Linear"}, {}});
    });
    error = load_error(base + "/float_tensors");
    EXPECT_NE(error.find("expected I8"), std::string::npos) << error;
    // Only q_proj of the fused q/k/v quantized.
    write_checkpoint(base + "/partly", config, RandomInt8Options{});
    rewrite_config(base + "/partly", [](nlohmann::json& json) {
        json["quantization_config"]["config_groups"]["group_0"]["targets"] = {"re:.*q_proj"};
    });
    error = load_error(base + "/partly");
    EXPECT_NE(error.find("fused"), std::string::npos) << error;
    EXPECT_NE(error.find("k_proj"), std::string::npos) << error;
    // A scale of the wrong shape.
    write_checkpoint(base + "/bad_scale", config, RandomInt8Options{ScaleStrategy::Tensor, {}, DType::F32});
    rewrite_config(base + "/bad_scale", [](nlohmann::json& json) {
        json["quantization_config"]["config_groups"]["group_0"]["weights"]["strategy"] = "channel";
    });
    EXPECT_TRUE(load_error(base + "/bad_scale").empty());  // [1] scales are valid for either strategy
}

// The test data's tiny Qwen3 (random weights, real vocabulary): int8 weights, embedding and LM
// head included, give logits that correlate > 0.99 with BF16 ones at every position.
TEST(Int8Qwen3Tiny, LogitsCorrelateWithBf16) {
    WeightQuantization int8;
    int8.int8_at_load = true;
    auto bf16 = make_runner(testdata_path("qwen3-tiny"), DType::BF16, runner_config());
    auto quantized = make_runner(testdata_path("qwen3-tiny"), DType::BF16, runner_config(), int8);
    std::vector<float> want = prompt_logits(*bf16);
    std::vector<float> got = prompt_logits(*quantized);
    const size_t vocab = size_t(bf16->model().config().vocab_size);
    for (size_t row = 0; row < 8; ++row) {
        double r = correlation(std::span(&got[row * vocab], vocab), std::span(&want[row * vocab], vocab));
        EXPECT_GT(r, 0.99) << "position " << row;
    }
    EXPECT_LT(quantized->model().weight_nbytes(), bf16->model().weight_nbytes() * 6 / 10);
}

}  // namespace
}  // namespace lmrun::testing
