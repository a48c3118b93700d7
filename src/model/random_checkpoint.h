// Writes a random-weight Hugging Face model folder (config.json + model.safetensors, or
// shards + model.safetensors.index.json) with the HF tensor names and shapes of
// Llama / Qwen2 / Qwen3, for tests and benchmarks of full-size shapes without real weights.
// Values come from a counter-based hash of (seed, tensor name, element index), so the
// output is the same for any thread count. Matrices and biases ~ approx N(0, std^2),
// norm weights ~ 1 + approx N(0, std^2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "model/config.h"
#include "model/safetensors_writer.h"

namespace lmrun {

struct RandomCheckpointOptions {
    ModelConfig config;
    DType dtype = DType::BF16;  // also written as the config's torch_dtype
    uint64_t seed = 0;
    float std = 0.02f;
    int64_t max_shard_bytes = 0;  // 0 = one model.safetensors; else shards of at most this size + index.json
};

Status write_random_checkpoint(const std::string& out_dir, const RandomCheckpointOptions& options);

// The HF tensor names and shapes of `config`'s checkpoint, in file order (`data` is null).
std::vector<TensorToWrite> hf_checkpoint_layout(const ModelConfig& config, DType dtype);

// Qwen/Qwen3-0.6B's shape: hidden 1024, 28 layers, 16 heads, 8 kv heads, head_dim 128,
// intermediate 3072, vocab 151936, tied embeddings.
ModelConfig qwen3_0_6b_config();

}  // namespace lmrun
