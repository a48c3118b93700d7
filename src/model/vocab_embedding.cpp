#include "model/vocab_embedding.h"

#include "kernels/embedding.h"
#include "parallel/process_group.h"

namespace lmrun {

VocabParallelEmbedding::VocabParallelEmbedding(int64_t vocab_size, int64_t hidden_size, DType dtype,
                                               const ParallelConfig& parallel)
    : vocab_size_(vocab_size),
      hidden_size_(hidden_size),
      rows_per_rank_((vocab_size + parallel.tp_size - 1) / parallel.tp_size),
      dtype_(dtype),
      parallel_(parallel) {}

Status VocabParallelEmbedding::load_weight(const TensorInfo& src) {
    if (int8_) {
        kernels::LinearWeightBuilder builder(rows_per_rank_, hidden_size_, DType::I8);
        LMRUN_RETURN_IF_ERROR(load_vocab_parallel(src, builder, parallel_));
        packed_table_ = builder.finish();
        return ok_status();
    }
    table_ = Tensor::zeros(dtype_, {rows_per_rank_, hidden_size_});
    return load_vocab_parallel(src, table_, parallel_);
}

void VocabParallelEmbedding::forward(const int32_t* token_ids, int64_t num_tokens, float* out) const {
    const int64_t first_id = int64_t(parallel_.tp_rank) * rows_per_rank_;
    if (!packed_table_.empty()) {
        kernels::embedding_lookup_packed(token_ids, num_tokens, packed_table_.packed(), out, first_id);
    } else {
        kernels::embedding_lookup(token_ids, num_tokens, table_.raw(), table_.dtype(), rows_per_rank_,
                                  hidden_size_, out, first_id);
    }
    if (parallel_.group) parallel_.group->all_reduce(out, num_tokens * hidden_size_);
}

void VocabParallelEmbedding::share_with(const kernels::LinearWeight& head) {
    LMRUN_CHECK(head.out_features() == rows_per_rank_ && head.in_features() == hidden_size_,
                "a tied LM head has the embedding table's shape");
    packed_table_ = head;
    shares_head_ = true;
    table_ = Tensor();
}

ParallelLMHead::ParallelLMHead(int64_t vocab_size, int64_t hidden_size, DType dtype,
                               const ParallelConfig& parallel)
    : vocab_size_(vocab_size),
      weight_builder_((vocab_size + parallel.tp_size - 1) / parallel.tp_size, hidden_size, dtype),
      parallel_(parallel) {}

void ParallelLMHead::set_quantization(LinearQuant quant) {
    quant_ = quant;
    if (quant == LinearQuant::None) return;
    const int64_t rows = weight_builder_.out_features();
    weight_builder_ =
        kernels::LinearWeightBuilder(rows, weight_builder_.in_features(), DType::I8,
                                     quant == LinearQuant::Int8Checkpoint ? kernels::WeightRowSource::Int8
                                                                          : kernels::WeightRowSource::Float);
    if (quant == LinearQuant::Int8Checkpoint) staged_scale_ = Tensor::zeros(DType::F32, {rows, 1});
}

Status ParallelLMHead::load_weight(const TensorInfo& src) {
    return load_vocab_parallel(src, weight_builder_, parallel_);
}

Status ParallelLMHead::load_weight_scale(const TensorInfo& src) {
    return load_vocab_parallel(src, staged_scale_, parallel_);
}

PackedWeightShape ParallelLMHead::packed_shape() const {
    return {weight_builder_.out_features(), weight_builder_.in_features(), weight_builder_.storage_dtype()};
}

void ParallelLMHead::finalize() {
    if (!packed_.empty()) {
        staged_scale_ = Tensor();
        return;
    }
    if (quant_ == LinearQuant::Int8Checkpoint)
        weight_builder_.set_scales(0, staged_scale_.data<float>(), weight_builder_.out_features());
    packed_ = weight_builder_.finish();
    staged_scale_ = Tensor();
}

void ParallelLMHead::forward(const float* hidden, int64_t num_rows, float* logits, LinearPath path) const {
    if (path == LinearPath::AllocationFree)
        return kernels::linear_allocation_free(hidden, num_rows, packed_, nullptr, logits);
    kernels::linear(hidden, num_rows, packed_, nullptr, logits);
}

}  // namespace lmrun
