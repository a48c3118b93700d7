// Writes a random-weight Hugging Face model folder (config.json + model.safetensors, or
// shards + model.safetensors.index.json) with the HF tensor names and shapes of
// Llama / Qwen2 / Qwen3, for tests and benchmarks of full-size shapes without real weights.
// Values come from a counter-based hash of (seed, tensor name, element index), so the
// output is the same for any thread count. Optionally an int8 W8A8 compressed-tensors checkpoint. Matrices
// and biases ~ approx N(0, std^2), norm weights ~ 1 + approx N(0, std^2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "model/config.h"
#include "model/safetensors_writer.h"

namespace lmrun {

// An int8 W8A8 checkpoint in the compressed-tensors format (quantization_config.h), as
// llm-compressor writes it: quantized layers hold `weight` (I8) and `weight_scale`; their int8
// values are the random float weights rounded to the checkpoint dtype and quantized with the
// kernels' rule (so a float checkpoint of the same seed, quantized at load, gives the same
// int8 values and, with F32 scales, the same scales).
struct RandomInt8Options {
    ScaleStrategy strategy = ScaleStrategy::Channel;
    std::vector<std::string> ignore = {"lm_head"};  // layers (or "re:" patterns) left in the float dtype
    DType scale_dtype = DType::F32;
};

struct RandomCheckpointOptions {
    ModelConfig config;
    DType dtype = DType::BF16;  // also written as the config's torch_dtype
    uint64_t seed = 0;
    float std = 0.02f;
    int64_t max_shard_bytes = 0;  // 0 = one model.safetensors; else shards of at most this size + index.json
    std::optional<RandomInt8Options> int8;  // set: write a compressed-tensors int8 W8A8 checkpoint
};

Status write_random_checkpoint(const std::string& out_dir, const RandomCheckpointOptions& options);

// The HF tensor names and shapes of `config`'s checkpoint, in file order (`data` is null); with
// `int8`, the quantized layers' weights are I8, each followed by its weight_scale.
std::vector<TensorToWrite> hf_checkpoint_layout(const ModelConfig& config, DType dtype,
                                                const RandomInt8Options* int8 = nullptr);

// Qwen/Qwen3-0.6B's shape: hidden 1024, 28 layers, 16 heads, 8 kv heads, head_dim 128,
// intermediate 3072, vocab 151936, tied embeddings.
ModelConfig qwen3_0_6b_config();

}  // namespace lmrun
