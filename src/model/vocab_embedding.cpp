#include "model/vocab_embedding.h"

#include "kernels/embedding.h"
#include "parallel/process_group.h"

namespace lmrun {

VocabParallelEmbedding::VocabParallelEmbedding(int64_t vocab_size, int64_t hidden_size, DType dtype,
                                               const ParallelConfig& parallel)
    : vocab_size_(vocab_size),
      hidden_size_(hidden_size),
      rows_per_rank_((vocab_size + parallel.tp_size - 1) / parallel.tp_size),
      parallel_(parallel) {
    table_ = Tensor::zeros(dtype, {rows_per_rank_, hidden_size});
}

Status VocabParallelEmbedding::load_weight(const TensorInfo& src) {
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
    LMRUN_CHECK(head.out_features() == table_.dim(0) && head.in_features() == hidden_size_,
                "a tied LM head has the embedding table's shape");
    packed_table_ = head;
    shares_head_ = true;
    table_ = Tensor();
}

void VocabParallelEmbedding::quantize_int8() {
    LMRUN_CHECK(!table_.empty(), "embedding table already packed");
    packed_table_ =
        kernels::LinearWeight::pack(table_.raw(), table_.dtype(), table_.dim(0), hidden_size_, DType::I8);
    table_ = Tensor();
}

ParallelLMHead::ParallelLMHead(int64_t vocab_size, int64_t hidden_size, DType dtype,
                               const ParallelConfig& parallel)
    : vocab_size_(vocab_size), hidden_size_(hidden_size), dtype_(dtype), parallel_(parallel) {}

Status ParallelLMHead::load_weight(const TensorInfo& src) {
    int64_t rows_per_rank = (vocab_size_ + parallel_.tp_size - 1) / parallel_.tp_size;
    staged_weight_ = Tensor::zeros(quant_ == LinearQuant::Int8Checkpoint ? DType::I8 : dtype_,
                                   {rows_per_rank, hidden_size_});
    return load_vocab_parallel(src, staged_weight_, parallel_);
}

Status ParallelLMHead::load_weight_scale(const TensorInfo& src) {
    int64_t rows_per_rank = (vocab_size_ + parallel_.tp_size - 1) / parallel_.tp_size;
    staged_scale_ = Tensor::zeros(DType::F32, {rows_per_rank, 1});
    return load_vocab_parallel(src, staged_scale_, parallel_);
}

void ParallelLMHead::tie_to(const VocabParallelEmbedding& embedding) {
    staged_weight_ = embedding.table();
}

void ParallelLMHead::finalize() {
    LMRUN_CHECK(!staged_weight_.empty(), "LM head has no weight (neither loaded nor tied)");
    if (quant_ == LinearQuant::Int8Checkpoint) {
        LMRUN_CHECK(!staged_scale_.empty(), "int8 LM head without scales");
        packed_ = kernels::LinearWeight::pack_int8(staged_weight_.data<int8_t>(), staged_scale_.data<float>(),
                                                   staged_weight_.dim(0), hidden_size_);
    } else {
        packed_ =
            kernels::LinearWeight::pack(staged_weight_.raw(), staged_weight_.dtype(), staged_weight_.dim(0),
                                        hidden_size_, quant_ == LinearQuant::Int8AtLoad ? DType::I8 : dtype_);
    }
    staged_weight_ = Tensor();
    staged_scale_ = Tensor();
}

void ParallelLMHead::forward(const float* hidden, int64_t num_rows, float* logits, LinearPath path) const {
    if (path == LinearPath::AllocationFree)
        return kernels::linear_allocation_free(hidden, num_rows, packed_, nullptr, logits);
    kernels::linear(hidden, num_rows, packed_, nullptr, logits);
}

}  // namespace lmrun
