#include "model/attention.h"

#include <cmath>

#include "core/op_profiler.h"
#include "kernels/attention_inputs.h"

namespace lmrun {

Attention::Attention(const ModelConfig& config, DType dtype, const ParallelConfig& parallel)
    : qkv_proj(config.hidden_size, config.head_dim, config.num_attention_heads, config.num_key_value_heads,
               config.attention_bias, dtype, parallel),
      o_proj(config.hidden_size, config.num_attention_heads * config.head_dim, false, dtype, parallel),
      scale_(float(1.0 / std::sqrt(double(config.head_dim)))) {
    if (config.qk_norm) {
        q_norm.emplace(config.head_dim, config.rms_norm_eps);
        k_norm.emplace(config.head_dim, config.rms_norm_eps);
    }
}

void Attention::finalize() {
    qkv_proj.finalize();
    o_proj.finalize();
}

void Attention::forward(const ForwardContext& context, const float* hidden,
                        const kernels::KvCacheLayer& cache, const float* rope_cos_sin,
                        ActivationBuffers& buffers, float* out) const {
    const int64_t rows = context.num_padded_tokens;
    const int64_t tokens = context.num_tokens;
    const int64_t head_dim = qkv_proj.head_dim();
    const int64_t num_heads = qkv_proj.num_heads();
    const int64_t num_kv_heads = qkv_proj.num_kv_heads();
    const int64_t stride = qkv_proj.out_features();
    float* qkv = buffers.qkv();
    const float* q = qkv;

    {
        ScopedOp scope(Op::QkvProj);
        qkv_proj.forward(hidden, rows, qkv, context.linear_path);
    }
    {
        ScopedOp scope(Op::QkNormRopeStore);
        const auto head_norm = [](const std::optional<RMSNorm>& norm) {
            return norm ? kernels::HeadNorm{norm->weight(), norm->eps()} : kernels::HeadNorm{};
        };
        kernels::prepare_attention_inputs({qkv, stride, num_heads, num_kv_heads, head_dim}, tokens,
                                          head_norm(q_norm), head_norm(k_norm), context.positions,
                                          rope_cos_sin, context.slot_mapping, cache);
    }
    float* attn_out = buffers.attn_out();
    {
        ScopedOp scope(Op::Attention);
        kernels::paged_attention(q, stride, context.num_seqs, context.cu_seqlens_q, context.context_lens,
                                 context.block_tables, context.max_blocks_per_seq, cache, num_heads, scale_,
                                 attn_out);
    }
    ScopedOp scope(Op::OProj);
    o_proj.forward(attn_out, rows, out, context.linear_path);
}

}  // namespace lmrun
