// Embedding lookup: rows of a [vocab, dim] table (F32 or BF16) → F32 out [num_tokens, dim].
// Token ids must be in [0, vocab) (the tokenizer and engine produce them; checked there).
// A vocab-parallel shard holds rows for ids [first_id, first_id + table rows) only: other ids
// get a zero row (the rank holding them contributes theirs; the ranks then all-reduce).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/linear_gemv.h"

namespace lmrun::kernels {

void embedding_lookup(const int32_t* token_ids, int64_t num_tokens, const void* table, DType table_dtype,
                      int64_t table_rows, int64_t dim, float* out, int64_t first_id = 0);
// The same lookup reading rows of a packed linear weight (a tied LM head), so a tied table is
// held once: row n's k-pairs sit 64 lanes apart in its tile (linear_gemv.h). int8 tables
// (linear_int8.h) are dequantized with the row's scale.
void embedding_lookup_packed(const int32_t* token_ids, int64_t num_tokens, const PackedLinear& table,
                             float* out, int64_t first_id = 0);

}  // namespace lmrun::kernels
