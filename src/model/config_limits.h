// What a config.json may ask of lmrun before anything is allocated for it: every size
// within a sane limit, every shape the kernels can run (head_dim, GQA group), and the
// memory the model's weights need against what the machine has. A checkpoint is
// untrusted input: a huge vocab_size or num_hidden_layers must be a clear error that
// names config.json and the field, never an abort or an attempt to allocate terabytes.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/result.h"
#include "model/config.h"

namespace lmrun {

// Upper limits of the config's sizes: several times the largest published model's
// (Llama 3.1 405B: hidden 16384, 126 layers, 128 heads; Llama 4: 10M positions).
struct ConfigLimits {
    static constexpr int64_t kMaxHiddenSize = 65536;
    static constexpr int64_t kMaxIntermediateSize = 262144;
    static constexpr int64_t kMaxNumHiddenLayers = 1024;
    static constexpr int64_t kMaxNumAttentionHeads = 1024;
    static constexpr int64_t kMaxVocabSize = int64_t(1) << 22;
    static constexpr int64_t kMaxPositionEmbeddings = int64_t(1) << 24;
    static constexpr int64_t kMaxHeadDim = 256;          // the attention kernels' scratch is sized for this
    static constexpr int64_t kMaxQueriesPerKvHead = 64;  // one attention tile holds a whole GQA group
};

// Checks the sizes of a parsed config against ConfigLimits and the kernels' supported
// shapes. Errors (kind Unsupported, subject `source`) name `source` and the field, e.g.
// "cfg/config.json: unsupported head_dim 512 (supported: even values from 2 to 256)".
Status check_config_limits(const ModelConfig& config, const std::string& source);

// How one rank holds the model, for the memory check: which linear layers are int8 (one byte
// per weight plus a float scale per output row; the rest in weight_dtype) and which share of
// the model it holds under tensor parallelism, next to how many ranks on the same machine.
struct ModelMemoryLayout {
    DType weight_dtype = DType::BF16;
    // Decoder layers whose fused q/k/v, o_proj, fused gate/up and down_proj are int8.
    int64_t int8_qkv_layers = 0;
    int64_t int8_o_layers = 0;
    int64_t int8_gate_up_layers = 0;
    int64_t int8_down_layers = 0;
    bool int8_lm_head = false;
    bool int8_embedding = false;  // a tied embedding is the head's table (counted once)
    int tp_size = 1;
    // Ranks whose shards live in this machine's memory: all of them for the mp backend, the
    // ranks on this node for mpi (ModelRunnerConfig::ranks_sharing_memory).
    int ranks_sharing_memory = 1;
};

// Bytes one rank holds once loaded: its shard of every parameter (1/tp of the q/o/MLP rows
// and columns and of the padded vocabulary; KV heads split, or replicated when there are fewer
// than ranks; norms and the RoPE table whole), int8 layers at a byte per weight plus scales.
double rank_model_memory_bytes(const ModelConfig& config, const ModelMemoryLayout& layout);
// The whole model in one process with `weight_dtype` weights.
double model_memory_bytes(const ModelConfig& config, DType weight_dtype);

// ResourceExhausted (subject `source`) when the ranks sharing this machine need more than
// `available_bytes` together: "DIR/config.json: the model needs 40.0 GiB for its BF16 weights,
// 22.1 GiB available" (with int8 layers "int8 and BF16 weights"; under tensor parallelism
// ", 2 ranks on this machine holding 1/4 of it each").
Status check_model_fits_memory(const ModelConfig& config, const ModelMemoryLayout& layout,
                               int64_t available_bytes, const std::string& source);

}  // namespace lmrun
