// make_random_model: writes a random-weight HF model folder (config.json + safetensors)
// of a preset or custom Llama / Qwen2 / Qwen3 shape, optionally as a compressed-tensors int8
// W8A8 checkpoint (--int8-w8a8). The logic is in
// src/model/random_checkpoint.h; this file only maps flags to RandomCheckpointOptions.
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/logging.h"
#include "core/timer.h"
#include "model/random_checkpoint.h"

namespace {

struct Flags {
    std::string out_dir;
    std::string preset;
    std::string arch = "qwen3";
    std::optional<int64_t> hidden, layers, heads, kv_heads, head_dim, intermediate, vocab, max_pos;
    bool tie = false;
    std::string dtype = "bf16";
    uint64_t seed = 0;
    float std = 0.02f;
    int64_t shard_mb = 0;
    bool int8 = false;
    std::string int8_strategy = "channel";
    std::vector<std::string> int8_ignore{"lm_head"};
};

lmrun::Result<lmrun::ModelConfig> build_config(const Flags& flags) {
    using lmrun::ModelArch;
    lmrun::ModelConfig config;
    if (flags.preset == "qwen3-0.6b") {
        config = lmrun::qwen3_0_6b_config();
    } else if (!flags.preset.empty()) {
        return lmrun::make_error("--preset: unknown preset '{}' (supported: qwen3-0.6b)", flags.preset);
    } else {
        ModelArch arch = flags.arch == "llama"   ? ModelArch::Llama
                         : flags.arch == "qwen2" ? ModelArch::Qwen2
                                                 : ModelArch::Qwen3;
        config = lmrun::default_model_config(arch);
        config.max_position_embeddings = 4096;
        config.tie_word_embeddings = flags.tie;
    }
    auto set = [](int64_t& field, const std::optional<int64_t>& value) {
        if (value) field = *value;
    };
    set(config.hidden_size, flags.hidden);
    set(config.num_hidden_layers, flags.layers);
    set(config.num_attention_heads, flags.heads);
    config.num_key_value_heads = flags.kv_heads.value_or(flags.preset.empty() ? config.num_attention_heads
                                                                              : config.num_key_value_heads);
    if (flags.preset.empty() && config.num_attention_heads > 0)
        config.head_dim = config.hidden_size / config.num_attention_heads;
    set(config.head_dim, flags.head_dim);
    set(config.intermediate_size, flags.intermediate);
    set(config.vocab_size, flags.vocab);
    set(config.max_position_embeddings, flags.max_pos);
    return config;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Write a random-weight Hugging Face model folder"};
    Flags flags;
    app.add_option("--out", flags.out_dir, "output folder")->required();
    app.add_option("--preset", flags.preset, "qwen3-0.6b");
    app.add_option("--arch", flags.arch, "qwen3 | qwen2 | llama")
        ->check(CLI::IsMember({"qwen3", "qwen2", "llama"}));
    app.add_option("--hidden", flags.hidden);
    app.add_option("--layers", flags.layers);
    app.add_option("--heads", flags.heads);
    app.add_option("--kv-heads", flags.kv_heads);
    app.add_option("--head-dim", flags.head_dim);
    app.add_option("--intermediate", flags.intermediate);
    app.add_option("--vocab", flags.vocab);
    app.add_option("--max-pos", flags.max_pos);
    app.add_flag("--tie", flags.tie, "tie lm_head to the embedding (custom shapes)");
    app.add_option("--dtype", flags.dtype, "bf16 | f32")->check(CLI::IsMember({"bf16", "f32", "f16"}));
    app.add_option("--seed", flags.seed);
    app.add_option("--std", flags.std, "weight standard deviation");
    app.add_option("--shard-mb", flags.shard_mb, "max shard size in MiB (0 = one file)");
    app.add_flag("--int8-w8a8", flags.int8, "write a compressed-tensors int8 W8A8 checkpoint");
    app.add_option("--int8-strategy", flags.int8_strategy, "weight scales per channel or per tensor")
        ->check(CLI::IsMember({"channel", "tensor"}))
        ->capture_default_str();
    app.add_option("--int8-ignore", flags.int8_ignore, "layers (or re: patterns) left unquantized")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    auto config = build_config(flags);
    if (!config.ok()) {
        lmrun::log_error("{}", config.error().message);
        return 1;
    }
    lmrun::RandomCheckpointOptions options;
    options.config = config.value();
    options.dtype = flags.dtype == "f32"   ? lmrun::DType::F32
                    : flags.dtype == "f16" ? lmrun::DType::F16
                                           : lmrun::DType::BF16;
    options.seed = flags.seed;
    options.std = flags.std;
    options.max_shard_bytes = flags.shard_mb * 1024 * 1024;
    if (flags.int8) {
        lmrun::RandomInt8Options int8;
        int8.strategy =
            flags.int8_strategy == "tensor" ? lmrun::ScaleStrategy::Tensor : lmrun::ScaleStrategy::Channel;
        int8.ignore = flags.int8_ignore;
        options.int8 = int8;
    }
    lmrun::Stopwatch timer;
    lmrun::Status status = lmrun::write_random_checkpoint(flags.out_dir, options);
    if (!status.ok()) {
        lmrun::log_error("{}", status.error().message);
        return 1;
    }
    lmrun::log_info("wrote {} in {:.2f} s", flags.out_dir, timer.elapsed_seconds());
    return 0;
}
