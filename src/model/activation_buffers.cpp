#include "model/activation_buffers.h"

#include <algorithm>

namespace lmrun {

ActivationBuffers::ActivationBuffers(const ModelConfig& config, int64_t max_num_tokens_,
                                     int64_t max_num_logit_rows_, int64_t num_heads_local,
                                     int64_t num_kv_heads_local, int64_t intermediate_local,
                                     int64_t vocab_local, bool full_logits)
    : max_num_tokens(max_num_tokens_), max_num_logit_rows(max_num_logit_rows_) {
    const int64_t tokens = max_num_tokens;
    hidden = Tensor::zeros(DType::F32, {tokens, config.hidden_size});
    residual = Tensor::zeros(DType::F32, {tokens, config.hidden_size});
    const int64_t qkv_width = (num_heads_local + 2 * num_kv_heads_local) * config.head_dim;
    const int64_t attn_width = num_heads_local * config.head_dim;
    projections = Tensor::zeros(DType::F32, {tokens, std::max(qkv_width, 2 * intermediate_local)});
    inner = Tensor::zeros(DType::F32, {tokens, std::max(attn_width, intermediate_local)});
    selected_hidden = Tensor::zeros(DType::F32, {max_num_logit_rows, config.hidden_size});
    selected_residual = Tensor::zeros(DType::F32, {max_num_logit_rows, config.hidden_size});
    if (full_logits) logits = Tensor::zeros(DType::F32, {max_num_logit_rows, config.vocab_size});
    if (vocab_local > 0) local_logits = Tensor::zeros(DType::F32, {max_num_logit_rows, vocab_local});
}

size_t ActivationBuffers::nbytes() const {
    return hidden.nbytes() + residual.nbytes() + projections.nbytes() + inner.nbytes() +
           selected_hidden.nbytes() + selected_residual.nbytes() + logits.nbytes() + local_logits.nbytes();
}

}  // namespace lmrun
