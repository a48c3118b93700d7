// Activation buffers of one forward step, allocated once for the largest step
// (max_num_batched_tokens rows) and reused by every step and every layer, so
// steps allocate nothing. Shapes are [rows, features], row-major F32.
#pragma once

#include "core/tensor.h"
#include "model/config.h"

namespace lmrun {

struct ActivationBuffers {
    ActivationBuffers() = default;
    // vocab_local > 0: a vocab-parallel rank's share of the logit columns (tensor parallelism);
    // full_logits: this rank receives every column (rank 0, which samples).
    ActivationBuffers(const ModelConfig& config, int64_t max_num_tokens, int64_t max_num_logit_rows,
                      int64_t num_heads_local, int64_t num_kv_heads_local, int64_t intermediate_local,
                      int64_t vocab_local = 0, bool full_logits = true);

    int64_t max_num_tokens = 0;
    int64_t max_num_logit_rows = 0;
    Tensor hidden;    // [T, hidden]
    Tensor residual;  // [T, hidden]
    // A layer's attention and MLP never hold their buffers at once, so they share memory
    // (~50 MB less at 2048 tokens on the 0.6B shape):
    //   projections: qkv [T, (heads + 2 kv_heads) * head_dim], then gate_up [T, 2 * intermediate]
    //   inner:       attn_out [T, heads * head_dim],          then mlp_act [T, intermediate]
    Tensor projections;
    Tensor inner;
    float* qkv() { return projections.data<float>(); }
    float* gate_up() { return projections.data<float>(); }
    float* attn_out() { return inner.data<float>(); }
    float* mlp_act() { return inner.data<float>(); }
    Tensor selected_hidden;  // [L, hidden]: rows whose logits are wanted
    Tensor selected_residual;
    Tensor logits;        // [L, vocab]; empty on tensor-parallel ranks other than 0
    Tensor local_logits;  // [L, vocab_local]: this rank's columns, before the gather (tensor parallelism)

    size_t nbytes() const;
    // What the constructor would allocate, in bytes (as a double: it is checked against the
    // memory available before anything is allocated, and may be absurd).
    static double planned_nbytes(const ModelConfig& config, int64_t max_num_tokens,
                                 int64_t max_num_logit_rows, int64_t num_heads_local,
                                 int64_t num_kv_heads_local, int64_t intermediate_local);
};

}  // namespace lmrun
