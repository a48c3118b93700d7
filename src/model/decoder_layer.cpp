#include "model/decoder_layer.h"

#include <cstring>

#include "core/op_profiler.h"
#include "kernels/activation.h"

namespace lmrun {

MLP::MLP(const ModelConfig& config, DType dtype, const ParallelConfig& parallel)
    : gate_up_proj(config.hidden_size, {config.intermediate_size, config.intermediate_size}, dtype, parallel),
      down_proj(config.hidden_size, config.intermediate_size, false, dtype, parallel) {}

void MLP::forward(const float* x, int64_t num_rows, LinearPath path, ActivationBuffers& buffers,
                  float* out) const {
    float* gate_up = buffers.gate_up();
    float* act = buffers.mlp_act();
    {
        ScopedOp scope(Op::GateUpProj);
        gate_up_proj.forward(x, num_rows, gate_up, path);
    }
    {
        ScopedOp scope(Op::SiluMul);
        kernels::silu_and_mul(gate_up, num_rows, down_proj.in_features(), act);
    }
    ScopedOp scope(Op::DownProj);
    down_proj.forward(act, num_rows, out, path);
}

void MLP::finalize() {
    gate_up_proj.finalize();
    down_proj.finalize();
}

DecoderLayer::DecoderLayer(const ModelConfig& config, DType dtype, const ParallelConfig& parallel)
    : input_layernorm(config.hidden_size, config.rms_norm_eps),
      self_attn(config, dtype, parallel),
      post_attention_layernorm(config.hidden_size, config.rms_norm_eps),
      mlp(config, dtype, parallel) {}

void DecoderLayer::forward(const ForwardContext& context, bool first_layer,
                           const kernels::KvCacheLayer& cache, const float* rope_cos_sin,
                           ActivationBuffers& buffers) const {
    const int64_t rows = context.num_padded_tokens;
    float* hidden = buffers.hidden.data<float>();
    float* residual = buffers.residual.data<float>();
    {
        ScopedOp scope(Op::Norm);
        if (first_layer) {
            std::memcpy(residual, hidden, size_t(rows) * input_layernorm.dim() * sizeof(float));
            input_layernorm.forward(residual, rows, hidden);
        } else {
            input_layernorm.forward_add(hidden, residual, rows);
        }
    }
    self_attn.forward(context, hidden, cache, rope_cos_sin, buffers, hidden);
    {
        ScopedOp scope(Op::Norm);
        post_attention_layernorm.forward_add(hidden, residual, rows);
    }
    mlp.forward(hidden, rows, context.linear_path, buffers, hidden);
}

void DecoderLayer::finalize() {
    self_attn.finalize();
    mlp.finalize();
}

}  // namespace lmrun
