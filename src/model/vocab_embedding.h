// Token embedding and LM head, split over the vocabulary across ranks
// (vocab-parallel): rank r holds rows [r * n, (r + 1) * n) of the table, n = ceil(vocab /
// tp_size) (the last shard is padded with zero rows). The embedding looks up the ids in its
// range, writes zero rows for the others and all-reduces; the LM head computes its n logit
// columns, which the model gathers to rank 0. With tied embeddings the LM head is built from
// the embedding table, so a checkpoint without `lm_head.weight` loads.
#pragma once

#include "core/result.h"
#include "core/tensor.h"
#include "kernels/linear.h"
#include "model/forward_context.h"
#include "model/parallel_linear.h"
#include "model/safetensors.h"
#include "model/weight_loader.h"

namespace lmrun {

class VocabParallelEmbedding {
  public:
    VocabParallelEmbedding(int64_t vocab_size, int64_t hidden_size, DType dtype,
                           const ParallelConfig& parallel);
    Status load_weight(const TensorInfo& src);
    // out[num_tokens, hidden] = table[token_ids], on every rank.
    void forward(const int32_t* token_ids, int64_t num_tokens, float* out) const;
    // Empty once shared_with() a tied head or packed to int8: the lookup then reads packed rows.
    const Tensor& table() const { return table_; }
    // Drops the table and looks rows up in `head` (the tied LM head built from it).
    void share_with(const kernels::LinearWeight& head);
    // Quantizes the table to int8 (one scale per row) in the linear layout and drops the float copy.
    void quantize_int8();
    size_t weight_nbytes() const { return table_.empty() ? packed_table_.nbytes() : table_.nbytes(); }
    bool shares_head() const { return shares_head_; }
    int64_t vocab_size() const { return vocab_size_; }
    int64_t rows_per_rank() const { return rows_per_rank_; }

  private:
    int64_t vocab_size_;
    int64_t hidden_size_;
    int64_t rows_per_rank_;
    Tensor table_;                        // [vocab_size / tp, hidden] in the storage dtype
    kernels::LinearWeight packed_table_;  // a tied head, or the int8 table
    bool shares_head_ = false;
    ParallelConfig parallel_;
};

class ParallelLMHead {
  public:
    ParallelLMHead(int64_t vocab_size, int64_t hidden_size, DType dtype, const ParallelConfig& parallel);
    // Chosen before loading, as for the linear layers (parallel_linear.h).
    void set_quantization(LinearQuant quant) { quant_ = quant; }
    Status load_weight(const TensorInfo& src);
    Status load_weight_scale(const TensorInfo& src);  // F32 [vocab, 1], for Int8Checkpoint
    // Ties the head to the embedding table (no lm_head.weight needed).
    void tie_to(const VocabParallelEmbedding& embedding);
    void finalize();
    // This rank's logit columns [num_rows, rows_per_rank()] for the given hidden rows only.
    void forward(const float* hidden, int64_t num_rows, float* logits, LinearPath path) const;
    int64_t vocab_size() const { return vocab_size_; }
    int64_t rows_per_rank() const { return (vocab_size_ + parallel_.tp_size - 1) / parallel_.tp_size; }
    size_t weight_nbytes() const { return packed_.nbytes(); }
    const kernels::LinearWeight& packed() const { return packed_; }

  private:
    int64_t vocab_size_;
    int64_t hidden_size_;
    DType dtype_;
    Tensor staged_weight_;
    Tensor staged_scale_;
    kernels::LinearWeight packed_;
    ParallelConfig parallel_;
    LinearQuant quant_ = LinearQuant::None;
};

}  // namespace lmrun
