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
    table_ = Tensor::zeros(dtype_, {rows_per_rank_, hidden_size_});
    return load_vocab_parallel(src, table_, parallel_);
}

void VocabParallelEmbedding::forward(const int32_t* token_ids, int64_t num_tokens, float* out) const {
    const int64_t first_id = int64_t(parallel_.tp_rank) * rows_per_rank_;
    if (!tied_head_.empty()) {
        kernels::embedding_lookup_packed(token_ids, num_tokens, tied_head_.packed(), out, first_id);
    } else {
        kernels::embedding_lookup(token_ids, num_tokens, table_.raw(), table_.dtype(), rows_per_rank_,
                                  hidden_size_, out, first_id);
    }
    if (parallel_.group) parallel_.group->all_reduce(out, num_tokens * hidden_size_);
}

void VocabParallelEmbedding::share_with(const kernels::LinearWeight& head) {
    LMRUN_CHECK(head.out_features() == rows_per_rank_ && head.in_features() == hidden_size_,
                "a tied LM head has the embedding table's shape");
    tied_head_ = head;
    table_ = Tensor();
}

ParallelLMHead::ParallelLMHead(int64_t vocab_size, int64_t hidden_size, DType dtype,
                               const ParallelConfig& parallel)
    : vocab_size_(vocab_size),
      weight_builder_((vocab_size + parallel.tp_size - 1) / parallel.tp_size, hidden_size, dtype),
      parallel_(parallel) {}

Status ParallelLMHead::load_weight(const TensorInfo& src) {
    return load_vocab_parallel(src, weight_builder_, parallel_);
}

void ParallelLMHead::finalize() {
    packed_ = weight_builder_.finish();
}

void ParallelLMHead::forward(const float* hidden, int64_t num_rows, float* logits, LinearPath path) const {
    if (path == LinearPath::AllocationFree)
        return kernels::linear_allocation_free(hidden, num_rows, packed_, nullptr, logits);
    kernels::linear(hidden, num_rows, packed_, nullptr, logits);
}

}  // namespace lmrun
