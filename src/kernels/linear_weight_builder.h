// Builds a LinearWeight part by part, straight from its source rows: the q, k and v rows of a
// fused matrix, one rank's shard of a checkpoint tensor, read in place from the mapped file
// through a strided view and converted to the storage dtype on the fly. The packed buffer is the
// only copy of the weight ever allocated (no staged [out, in] tensor), and the packing itself,
// tile by tile on every thread, is what first touches its pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "kernels/linear.h"

namespace lmrun::kernels {

// Rows of a weight matrix as stored: row r starts at static_cast<const char*>(data) +
// r * row_stride_bytes and holds in_features elements of `dtype` (F32, BF16 or F16). Any
// alignment (safetensors only promises byte offsets).
struct WeightRows {
    const void* data = nullptr;
    DType dtype = DType::F32;
    int64_t num_rows = 0;
    size_t row_stride_bytes = 0;
};

class LinearWeightBuilder {
  public:
    LinearWeightBuilder() = default;
    // The weight W[out_features, in_features] held as storage_dtype (F32 or BF16). Nothing is
    // allocated until the first rows arrive.
    LinearWeightBuilder(int64_t out_features, int64_t in_features, DType storage_dtype);

    int64_t out_features() const { return out_features_; }
    int64_t in_features() const { return in_features_; }
    DType storage_dtype() const { return storage_dtype_; }

    // Packs `rows` as output rows [first_row, first_row + rows.num_rows), padding (k past
    // in_features) as zero. Returns -1, or the index within `rows` of the first row that holds
    // NaN or Inf once converted (a corrupt checkpoint; the rows are packed anyway).
    int64_t pack_rows(int64_t first_row, const WeightRows& rows);
    // Output rows [first_row, first_row + num_rows) are zero (a vocabulary's padding rows).
    void zero_rows(int64_t first_row, int64_t num_rows);
    // The packed weight; every output row must have been written. Leaves the builder empty.
    LinearWeight finish();

  private:
    void allocate();
    void mark_written(int64_t first_row, int64_t num_rows);

    int64_t out_features_ = 0;
    int64_t in_features_ = 0;
    DType storage_dtype_ = DType::F32;
    std::shared_ptr<LinearWeightState> state_;
    std::vector<bool> rows_written_;
};

}  // namespace lmrun::kernels
