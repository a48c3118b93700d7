// Builds a LinearWeight part by part, straight from its source rows: the q, k and v rows of a
// fused matrix, one rank's shard of a checkpoint tensor, read in place from the mapped file
// through a strided view and converted to the storage dtype on the fly (or quantized to int8 row
// by row). The packed buffer is the only copy of the weight ever allocated (no staged [out, in]
// tensor), and the packing itself, tile by tile on every thread, is what first touches its pages.
// LinearWeight::pack() and pack_int8() are this builder fed the whole matrix at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "kernels/linear.h"

namespace lmrun::kernels {

// Rows of a weight matrix as stored: row r starts at static_cast<const char*>(data) +
// r * row_stride_bytes and holds in_features elements of `dtype` (F32, BF16 or F16; I8 for
// already quantized rows). Any alignment (safetensors only promises byte offsets).
struct WeightRows {
    const void* data = nullptr;
    DType dtype = DType::F32;
    int64_t num_rows = 0;
    size_t row_stride_bytes = 0;
};

// What pack_rows() takes.
enum class WeightRowSource {
    // F32, BF16 or F16 rows, converted to the storage dtype; for I8 storage each row is quantized
    // to symmetric int8 with its own scale (quantize_row_int8_reference, linear_int8.h).
    Float,
    // I8 storage only: rows already quantized (a compressed-tensors checkpoint), q in [-127, 127]
    // (-128 is clamped to -127), w[n][k] = q[n][k] · scale[n] with the scales from set_scales().
    Int8,
};

class LinearWeightBuilder {
  public:
    LinearWeightBuilder() = default;
    // The weight W[out_features, in_features] held as storage_dtype (F32, BF16 or I8). Nothing is
    // allocated until the first rows arrive.
    LinearWeightBuilder(int64_t out_features, int64_t in_features, DType storage_dtype,
                        WeightRowSource row_source = WeightRowSource::Float);

    int64_t out_features() const { return out_features_; }
    int64_t in_features() const { return in_features_; }
    DType storage_dtype() const { return storage_dtype_; }
    WeightRowSource row_source() const { return row_source_; }

    // Packs `rows` as output rows [first_row, first_row + rows.num_rows), padding (k past
    // in_features) as zero. Returns -1, or the index within `rows` of the first row that holds
    // NaN or Inf once converted (a corrupt checkpoint; the rows are packed anyway).
    int64_t pack_rows(int64_t first_row, const WeightRows& rows);
    // WeightRowSource::Int8: the scales of output rows [first_row, first_row + count).
    void set_scales(int64_t first_row, const float* scales, int64_t count);
    // Output rows [first_row, first_row + num_rows) are zero (a vocabulary's padding rows).
    void zero_rows(int64_t first_row, int64_t num_rows);
    // The packed weight; every output row must have been written (and, for Int8 rows, scaled).
    // Leaves the builder empty.
    LinearWeight finish();

  private:
    void allocate();
    void mark(std::vector<bool>& marks, int64_t first_row, int64_t num_rows);

    int64_t out_features_ = 0;
    int64_t in_features_ = 0;
    DType storage_dtype_ = DType::F32;
    WeightRowSource row_source_ = WeightRowSource::Float;
    std::shared_ptr<LinearWeightState> state_;
    std::vector<bool> rows_written_;
    std::vector<bool> rows_scaled_;  // Int8 rows only
};

}  // namespace lmrun::kernels
