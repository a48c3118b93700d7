#include "model/activation_buffers.h"

#include <algorithm>

namespace lmrun {
namespace {

// Columns of the shared buffers (see the header): the wider of what attention and the MLP need.
int64_t projection_width(const ModelConfig& config, int64_t heads, int64_t kv_heads, int64_t intermediate) {
    return std::max((heads + 2 * kv_heads) * config.head_dim, 2 * intermediate);
}
int64_t inner_width(const ModelConfig& config, int64_t heads, int64_t intermediate) {
    return std::max(heads * config.head_dim, intermediate);
}

}  // namespace

double ActivationBuffers::planned_nbytes(const ModelConfig& config, int64_t max_num_tokens,
                                         int64_t max_num_logit_rows, int64_t num_heads_local,
                                         int64_t num_kv_heads_local, int64_t intermediate_local) {
    const double token_columns =
        2.0 * double(config.hidden_size) +
        double(projection_width(config, num_heads_local, num_kv_heads_local, intermediate_local)) +
        double(inner_width(config, num_heads_local, intermediate_local));
    const double logit_columns = 2.0 * double(config.hidden_size) + double(config.vocab_size);
    return 4.0 * (double(max_num_tokens) * token_columns + double(max_num_logit_rows) * logit_columns);
}

ActivationBuffers::ActivationBuffers(const ModelConfig& config, int64_t max_num_tokens_,
                                     int64_t max_num_logit_rows_, int64_t num_heads_local,
                                     int64_t num_kv_heads_local, int64_t intermediate_local,
                                     int64_t vocab_local, bool full_logits)
    : max_num_tokens(max_num_tokens_), max_num_logit_rows(max_num_logit_rows_) {
    const int64_t tokens = max_num_tokens;
    hidden = Tensor::zeros(DType::F32, {tokens, config.hidden_size});
    residual = Tensor::zeros(DType::F32, {tokens, config.hidden_size});
    projections = Tensor::zeros(
        DType::F32,
        {tokens, projection_width(config, num_heads_local, num_kv_heads_local, intermediate_local)});
    inner = Tensor::zeros(DType::F32, {tokens, inner_width(config, num_heads_local, intermediate_local)});
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
