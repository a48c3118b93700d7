// Token embedding and LM head, split over the vocabulary across ranks
// (vocab-parallel): rank r holds rows [r * n, (r + 1) * n) of the table, n = ceil(vocab /
// tp_size) (the last shard is padded with zero rows). The embedding looks up the ids in its
// range, writes zero rows for the others and all-reduces; the LM head computes its n logit
// columns, which the model gathers to rank 0. With tied embeddings the LM head is packed from
// the embedding's checkpoint tensor and the embedding looks its rows up in the packed head, so
// the table is held once and a checkpoint without `lm_head.weight` loads.
#pragma once

#include "core/result.h"
#include "core/tensor.h"
#include "kernels/linear.h"
#include "model/forward_context.h"
#include "model/safetensors.h"
#include "model/weight_loader.h"

namespace lmrun {

class VocabParallelEmbedding {
  public:
    VocabParallelEmbedding(int64_t vocab_size, int64_t hidden_size, DType dtype,
                           const ParallelConfig& parallel);
    // Copies the table (untied models; a tied model calls share_with() instead).
    Status load_weight(const TensorInfo& src);
    // out[num_tokens, hidden] = table[token_ids], on every rank.
    void forward(const int32_t* token_ids, int64_t num_tokens, float* out) const;
    // Empty until load_weight(), and when sharing a tied head's packed weight.
    const Tensor& table() const { return table_; }
    // Looks rows up in `head` (the tied LM head, packed from this embedding's tensor).
    void share_with(const kernels::LinearWeight& head);
    int64_t vocab_size() const { return vocab_size_; }
    int64_t rows_per_rank() const { return rows_per_rank_; }

  private:
    int64_t vocab_size_;
    int64_t hidden_size_;
    int64_t rows_per_rank_;
    DType dtype_;
    Tensor table_;  // [rows_per_rank, hidden] in the storage dtype
    kernels::LinearWeight tied_head_;
    ParallelConfig parallel_;
};

class ParallelLMHead {
  public:
    ParallelLMHead(int64_t vocab_size, int64_t hidden_size, DType dtype, const ParallelConfig& parallel);
    // Packs this rank's rows of `src` ([vocab, hidden]: lm_head.weight, or with tied embeddings
    // model.embed_tokens.weight) straight from the checkpoint.
    Status load_weight(const TensorInfo& src);
    // The packed head is complete: the kernels may use it.
    void finalize();
    // This rank's logit columns [num_rows, rows_per_rank()] for the given hidden rows only.
    void forward(const float* hidden, int64_t num_rows, float* logits, LinearPath path) const;
    int64_t vocab_size() const { return vocab_size_; }
    int64_t rows_per_rank() const { return (vocab_size_ + parallel_.tp_size - 1) / parallel_.tp_size; }
    size_t weight_nbytes() const { return packed_.nbytes(); }
    const kernels::LinearWeight& packed() const { return packed_; }

  private:
    int64_t vocab_size_;
    kernels::LinearWeightBuilder weight_builder_;  // [rows_per_rank, hidden] until finalize()
    kernels::LinearWeight packed_;
    ParallelConfig parallel_;
};

}  // namespace lmrun
