// What one forward step needs to know about its batch, built by the ModelRunner
// and passed explicitly (no global) down to the attention layers.
//
// The batch is `num_seqs` sequences; sequence s contributes the tokens
// [cu_seqlens_q[s], cu_seqlens_q[s+1]) of the flattened token dimension
// (1 token for a decode, a chunk for a (chunked) prefill) and has context_lens[s]
// keys in total once they are stored (cached prefix + new tokens).
#pragma once

#include <cstdint>

namespace lmrun {

// Decode plans replay steps that must not allocate; prefill may use any kernel.
enum class LinearPath { Fastest, AllocationFree };

struct ForwardContext {
    LinearPath linear_path = LinearPath::Fastest;
    int64_t num_tokens = 0;         // real tokens in the step
    int64_t num_padded_tokens = 0;  // rows the projections run on (decode pads to its bucket)
    int64_t num_seqs = 0;
    const int32_t* input_ids = nullptr;     // [num_padded_tokens]
    const int32_t* positions = nullptr;     // [num_padded_tokens]
    const int32_t* cu_seqlens_q = nullptr;  // [num_seqs + 1]
    const int32_t* slot_mapping = nullptr;  // [num_padded_tokens]; -1 = do not store
    const int32_t* context_lens = nullptr;  // [num_seqs]
    const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
    int64_t max_blocks_per_seq = 0;
};

}  // namespace lmrun
