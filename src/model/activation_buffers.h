// Activation buffers of one forward step, allocated once for the largest step
// (max_num_batched_tokens rows) and reused by every step and every layer, so
// steps allocate nothing. Shapes are [rows, features], row-major F32.
#pragma once

#include "core/tensor.h"
#include "model/config.h"

namespace lmrun {

struct ActivationBuffers {
    ActivationBuffers() = default;
    ActivationBuffers(const ModelConfig& config, int64_t max_num_tokens, int64_t max_num_logit_rows,
                      int64_t num_heads_local, int64_t num_kv_heads_local, int64_t intermediate_local);

    int64_t max_num_tokens = 0;
    int64_t max_num_logit_rows = 0;
    Tensor hidden;           // [T, hidden]
    Tensor residual;         // [T, hidden]
    Tensor qkv;              // [T, (heads + 2 kv_heads) * head_dim]
    Tensor attn_out;         // [T, heads * head_dim]
    Tensor gate_up;          // [T, 2 * intermediate]
    Tensor mlp_act;          // [T, intermediate]
    Tensor selected_hidden;  // [L, hidden]: rows whose logits are wanted
    Tensor selected_residual;
    Tensor logits;           // [L, vocab]

    size_t nbytes() const;
};

}  // namespace lmrun
