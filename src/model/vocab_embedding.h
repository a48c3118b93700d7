// Token embedding and LM head, split over the vocabulary across ranks
// (vocab-parallel): rank r holds rows [r * n, (r + 1) * n) of the table, n = ceil(vocab /
// tp_size) (the last shard is padded with zero rows). The embedding looks up the ids in its
// range, writes zero rows for the others and all-reduces; the LM head computes its n logit
// columns, which the model gathers to rank 0. With tied embeddings the LM head is packed from
// the embedding's checkpoint tensor and the embedding looks its rows up in the packed head, so
// the table is held once and a checkpoint without `lm_head.weight` loads. Both may hold int8
// rows (parallel_linear.h's LinearQuant), packed as they load.
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
    // Called before load_weight(): the table is packed to int8 rows (one scale per row) in the
    // linear layout as it loads, and no float table is held.
    void hold_int8() { int8_ = true; }
    // Copies (or packs to int8) the table (untied models; a tied model calls share_with() instead).
    Status load_weight(const TensorInfo& src);
    // out[num_tokens, hidden] = table[token_ids], on every rank.
    void forward(const int32_t* token_ids, int64_t num_tokens, float* out) const;
    // Empty until load_weight(), and once it shares a tied head or holds int8 rows: the lookup
    // then reads packed rows.
    const Tensor& table() const { return table_; }
    // Looks rows up in `head` (the tied LM head, packed from this embedding's tensor).
    void share_with(const kernels::LinearWeight& head);
    size_t weight_nbytes() const { return table_.empty() ? packed_table_.nbytes() : table_.nbytes(); }
    bool shares_head() const { return shares_head_; }
    int64_t vocab_size() const { return vocab_size_; }
    int64_t rows_per_rank() const { return rows_per_rank_; }

  private:
    int64_t vocab_size_;
    int64_t hidden_size_;
    int64_t rows_per_rank_;
    DType dtype_;
    bool int8_ = false;
    Tensor table_;                        // [rows_per_rank, hidden] in the storage dtype
    kernels::LinearWeight packed_table_;  // a tied head, or the int8 table
    bool shares_head_ = false;
    ParallelConfig parallel_;
};

class ParallelLMHead {
  public:
    ParallelLMHead(int64_t vocab_size, int64_t hidden_size, DType dtype, const ParallelConfig& parallel);
    // Chosen before loading, as for the linear layers (parallel_linear.h).
    void set_quantization(LinearQuant quant);
    // Packs this rank's rows of `src` ([vocab, hidden]: lm_head.weight, or with tied embeddings
    // model.embed_tokens.weight) straight from the checkpoint.
    Status load_weight(const TensorInfo& src);
    Status load_weight_scale(const TensorInfo& src);  // F32 [vocab, 1], for Int8Checkpoint
    // The packed head is complete: the kernels may use it.
    void finalize();
    // As LinearBase's (parallel_linear.h): the packed head's shape, and a head already packed.
    PackedWeightShape packed_shape() const;
    void use_packed(kernels::LinearWeight weight) { packed_ = std::move(weight); }
    // This rank's logit columns [num_rows, rows_per_rank()] for the given hidden rows only.
    void forward(const float* hidden, int64_t num_rows, float* logits, LinearPath path) const;
    int64_t vocab_size() const { return vocab_size_; }
    int64_t rows_per_rank() const { return (vocab_size_ + parallel_.tp_size - 1) / parallel_.tp_size; }
    size_t weight_nbytes() const { return packed_.nbytes(); }
    const kernels::LinearWeight& packed() const { return packed_; }

  private:
    int64_t vocab_size_;
    kernels::LinearWeightBuilder weight_builder_;  // [rows_per_rank, hidden] until finalize()
    Tensor staged_scale_;                          // F32 [rows_per_rank, 1] for Int8Checkpoint
    kernels::LinearWeight packed_;
    ParallelConfig parallel_;
    LinearQuant quant_ = LinearQuant::None;
};

}  // namespace lmrun
