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

// Bytes a model holds in memory once loaded with weights of `weight_dtype`: every
// parameter (embedding, LM head unless tied, all layers) plus the RoPE table.
double model_memory_bytes(const ModelConfig& config, DType weight_dtype);

// ResourceExhausted (subject `source`) when the model needs more than `available_bytes`:
// "DIR/config.json: the model needs 40.0 GiB for its bfloat16 weights, 22.1 GiB available".
Status check_model_fits_memory(const ModelConfig& config, DType weight_dtype, int64_t available_bytes,
                               const std::string& source);

}  // namespace lmrun
