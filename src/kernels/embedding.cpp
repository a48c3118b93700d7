#include "kernels/embedding.h"

#include <algorithm>

#include "core/check.h"
#include "core/parallel.h"

namespace lmrun::kernels {

void embedding_lookup(const int32_t* token_ids, int64_t num_tokens, const void* table, DType table_dtype,
                      int64_t table_rows, int64_t dim, float* out, int64_t first_id) {
    LMRUN_CHECK(table_dtype == DType::F32 || table_dtype == DType::BF16 || table_dtype == DType::F16,
                "embedding table must be a float type");
    const size_t row_bytes = size_t(dim) * dtype_size_bytes(table_dtype);
    auto copy_rows = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            LMRUN_CHECK(token_ids[t] >= 0, "negative token id %d", token_ids[t]);
            const int64_t row_index = token_ids[t] - first_id;
            if (row_index < 0 || row_index >= table_rows) {
                std::fill_n(out + t * dim, dim, 0.0f);
                continue;
            }
            const char* row = static_cast<const char*>(table) + size_t(row_index) * row_bytes;
            convert_to_f32(row, table_dtype, out + t * dim, size_t(dim));
        }
    };
    if (num_tokens * dim < (1 << 16)) return copy_rows(0, num_tokens);
    parallel_for(num_tokens, copy_rows);
}

void embedding_lookup_packed(const int32_t* token_ids, int64_t num_tokens, const PackedLinear& table,
                             float* out, int64_t first_id) {
    const int64_t dim = table.in_features;
    auto copy_rows = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            LMRUN_CHECK(token_ids[t] >= 0, "negative token id %d", token_ids[t]);
            const int64_t id = token_ids[t] - first_id;
            float* row = out + t * dim;
            if (id < 0 || id >= table.out_features) {
                std::fill_n(row, dim, 0.0f);
                continue;
            }
            const int64_t lane_offset = packed_offset(table, id, 0);
            if (table.dtype == DType::I8) {
                const int8_t* quads = static_cast<const int8_t*>(table.data) + lane_offset;
                const float scale = table.scales[id];
                for (int64_t k = 0; k < dim; ++k) {
                    const int64_t quad_byte = (k / 4) * kTileOutputs * 4 + (k % 4);
                    row[k] = float(quads[quad_byte]) * scale;
                }
            } else if (table.dtype == DType::BF16) {
                const uint16_t* pairs = static_cast<const uint16_t*>(table.data) + lane_offset;
                for (int64_t k = 0; k < dim; ++k)
                    row[k] = bf16_to_f32(pairs[(k / 2) * kTileOutputs * 2 + (k % 2)]);
            } else {
                const float* column = static_cast<const float*>(table.data) + lane_offset;
                for (int64_t k = 0; k < dim; ++k) row[k] = column[k * kTileOutputs];
            }
        }
    };
    if (num_tokens * dim < (1 << 16)) return copy_rows(0, num_tokens);
    parallel_for(num_tokens, copy_rows);
}

}  // namespace lmrun::kernels
