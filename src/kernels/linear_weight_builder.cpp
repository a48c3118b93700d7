#include "kernels/linear_weight_builder.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/check.h"
#include "core/parallel.h"
#include "kernels/linear_int8.h"
#include "kernels/linear_weight_state.h"

namespace lmrun::kernels {
namespace {

// Large weights go on 2 MiB-aligned, huge-page-advised memory: the GEMV streams them at DRAM
// speed, and 4 KiB pages cost it ~30% in TLB misses (measured on the LM head). The kernel zeroes
// a fresh page on first touch either way; a 2 MiB page costs one fault instead of 512.
void* allocate_weight_memory(size_t nbytes) {
    constexpr size_t kHugePage = size_t(2) << 20;
    if (nbytes < kHugePage) return std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
    size_t rounded = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = std::aligned_alloc(kHugePage, rounded);
    if (memory) madvise(memory, rounded, MADV_HUGEPAGE);  // advice only; failure is harmless
    return memory;
}

// Every packed layout is a transpose of 4-byte words: a tile is [padded_in words][64 lanes] of
// one word each, where a row's word j is its bytes [4j, 4j + 4): one F32 element, a BF16 k-pair
// (slot k%2 at the low half), or an int8 k-quad. So one routine packs lanes [lane_begin,
// lane_end) of a tile from rows already in the storage dtype (`rows` is lane lane_begin's row),
// a last partial word zero-filled and the words past the row (padded k) zero.
void pack_lanes(const unsigned char* rows, size_t row_stride, int64_t lane_begin, int64_t lane_end,
                const PackedLinear& w, unsigned char* tile) {
    constexpr size_t kWord = 4;
    const size_t row_bytes = size_t(w.in_features) * dtype_size_bytes(w.dtype);
    const size_t full_words = row_bytes / kWord;
    const size_t tile_words = size_t(w.padded_in) * dtype_size_bytes(w.dtype) / kWord;
    const int64_t lanes = lane_end - lane_begin;
    auto word_out = [&](size_t word) {
        return tile + (word * size_t(kTileOutputs) + size_t(lane_begin)) * kWord;
    };
    for (size_t word = 0; word < full_words; ++word) {
        unsigned char* out = word_out(word);
        const unsigned char* src = rows + word * kWord;
        for (int64_t lane = 0; lane < lanes; ++lane)
            std::memcpy(out + size_t(lane) * kWord, src + size_t(lane) * row_stride, kWord);
    }
    size_t word = full_words;
    if (row_bytes % kWord != 0) {
        unsigned char* out = word_out(word);
        const unsigned char* src = rows + word * kWord;
        for (int64_t lane = 0; lane < lanes; ++lane) {
            unsigned char bytes[kWord] = {};  // little-endian: the row's bytes fill the low end
            std::memcpy(bytes, src + size_t(lane) * row_stride, row_bytes % kWord);
            std::memcpy(out + size_t(lane) * kWord, bytes, kWord);
        }
        ++word;
    }
    for (; word < tile_words; ++word) std::memset(word_out(word), 0, size_t(lanes) * kWord);
}

// Row i of `source` (counted from `rows`), copied into `scratch` first when it is not aligned
// to its element size: safetensors only promises byte offsets, the converters read elements.
const unsigned char* source_row(const unsigned char* rows, const WeightRows& source, int64_t i,
                                size_t row_bytes, std::vector<unsigned char>& scratch) {
    const unsigned char* row = rows + size_t(i) * source.row_stride_bytes;
    if (reinterpret_cast<uintptr_t>(row) % dtype_size_bytes(source.dtype) == 0) return row;
    scratch.assign(row, row + row_bytes);
    return scratch.data();
}

// `count` float source rows converted to the storage dtype (F32 or BF16), one after another in
// `out`. Returns the index of the first row holding NaN or Inf once converted, or -1.
int64_t convert_rows(const unsigned char* rows, const WeightRows& source, int64_t count, int64_t in_features,
                     DType storage_dtype, std::vector<unsigned char>& out) {
    const size_t src_bytes = size_t(in_features) * dtype_size_bytes(source.dtype);
    const size_t dst_bytes = size_t(in_features) * dtype_size_bytes(storage_dtype);
    out.resize(size_t(count) * dst_bytes);
    std::vector<unsigned char> aligned;
    std::vector<float> floats(static_cast<size_t>(in_features));
    int64_t first_bad = -1;
    for (int64_t i = 0; i < count; ++i) {
        const unsigned char* row = source_row(rows, source, i, src_bytes, aligned);
        unsigned char* to = out.data() + size_t(i) * dst_bytes;
        if (storage_dtype == DType::F32) {
            convert_to_f32(row, source.dtype, reinterpret_cast<float*>(to), size_t(in_features));
        } else {
            convert_to_f32(row, source.dtype, floats.data(), size_t(in_features));
            convert_from_f32(floats.data(), to, storage_dtype, size_t(in_features));
        }
        if (first_bad < 0 && has_non_finite(to, storage_dtype, size_t(in_features))) first_bad = i;
    }
    return first_bad;
}

// Records output row n of an int8 weight: its scale and compensation (128 · Σ_k q[k]).
void record_int8_row(LinearWeightState& state, int64_t n, const int8_t* q, int64_t in_features, float scale) {
    int32_t sum = 0;
    for (int64_t k = 0; k < in_features; ++k) sum += q[k];
    state.scales[size_t(n)] = scale;
    state.compensation[size_t(n)] = 128 * sum;
}

// `count` float source rows quantized to int8, one after another in `out`, their scales and
// compensation recorded as output rows [first_out, first_out + count). A row holding NaN or Inf
// becomes zeros (no int8 stands for it; the caller reports the corrupt weight). Returns the
// index of the first such row, or -1.
int64_t quantize_rows(const unsigned char* rows, const WeightRows& source, int64_t count, int64_t in_features,
                      int64_t first_out, LinearWeightState& state, std::vector<unsigned char>& out) {
    const size_t src_bytes = size_t(in_features) * dtype_size_bytes(source.dtype);
    out.resize(size_t(count) * size_t(in_features));
    std::vector<unsigned char> aligned;
    std::vector<float> floats(static_cast<size_t>(in_features));
    int64_t first_bad = -1;
    for (int64_t i = 0; i < count; ++i) {
        const unsigned char* row = source_row(rows, source, i, src_bytes, aligned);
        convert_to_f32(row, source.dtype, floats.data(), size_t(in_features));
        auto* q = reinterpret_cast<int8_t*>(out.data() + size_t(i) * size_t(in_features));
        float scale = 0.0f;
        if (has_non_finite(floats.data(), DType::F32, size_t(in_features))) {
            if (first_bad < 0) first_bad = i;
            std::memset(q, 0, size_t(in_features));
        } else {
            scale = quantize_row_int8_reference(floats.data(), in_features, q);
        }
        record_int8_row(state, first_out + i, q, in_features, scale);
    }
    return first_bad;
}

// `count` already quantized rows copied one after another into `out` (-128 clamped to -127),
// their compensation recorded as output rows [first_out, first_out + count); the scales come
// with set_scales().
void copy_int8_rows(const unsigned char* rows, size_t row_stride, int64_t count, int64_t in_features,
                    int64_t first_out, LinearWeightState& state, std::vector<unsigned char>& out) {
    out.resize(size_t(count) * size_t(in_features));
    for (int64_t i = 0; i < count; ++i) {
        const auto* from = reinterpret_cast<const int8_t*>(rows + size_t(i) * row_stride);
        auto* q = reinterpret_cast<int8_t*>(out.data() + size_t(i) * size_t(in_features));
        for (int64_t k = 0; k < in_features; ++k) q[k] = from[k] < -127 ? int8_t(-127) : from[k];
        record_int8_row(state, first_out + i, q, in_features, state.scales[size_t(first_out + i)]);
    }
}

void lower_to(std::atomic<int64_t>& value, int64_t candidate) {
    int64_t current = value.load();
    while (candidate < current && !value.compare_exchange_weak(current, candidate)) {
    }
}

}  // namespace

LinearWeightBuilder::LinearWeightBuilder(int64_t out_features, int64_t in_features, DType storage_dtype,
                                         WeightRowSource row_source)
    : out_features_(out_features),
      in_features_(in_features),
      storage_dtype_(storage_dtype),
      row_source_(row_source) {
    LMRUN_CHECK(storage_dtype == DType::F32 || storage_dtype == DType::BF16 || storage_dtype == DType::I8,
                "linear weights are stored as F32, BF16 or I8");
    LMRUN_CHECK(row_source == WeightRowSource::Float || storage_dtype == DType::I8,
                "int8 rows are held as int8");
}

void LinearWeightBuilder::allocate() {
    if (state_) return;
    LMRUN_CHECK(out_features_ > 0 && in_features_ > 0, "empty linear weight");
    state_ = std::make_shared<LinearWeightState>();
    state_->packed = packed_layout(out_features_, in_features_, storage_dtype_);
    PackedLinear& w = state_->packed;
    state_->nbytes = w.tiles_nbytes();
    const size_t tile_bytes = state_->nbytes / size_t(w.num_tiles);
    state_->buffer.reset(allocate_weight_memory(state_->nbytes));
    LMRUN_CHECK(state_->buffer != nullptr, "out of memory packing a linear weight");
    w.data = state_->buffer.get();
    // The lanes past out_features in the last tile belong to no row: zero them now (the kernels
    // read them); pack_rows writes every other byte, padded k included.
    if (out_features_ % kTileOutputs != 0)
        std::memset(static_cast<unsigned char*>(state_->buffer.get()) + size_t(w.num_tiles - 1) * tile_bytes,
                    0, tile_bytes);
    if (storage_dtype_ == DType::I8) {
        // Padding outputs keep scale and compensation 0.
        const size_t outputs = w.padded_outputs();
        state_->scales.assign(outputs, 0.0f);
        state_->compensation.assign(outputs, 0);
        w.scales = state_->scales.data();
        w.compensation = state_->compensation.data();
        state_->nbytes += outputs * (sizeof(float) + sizeof(int32_t));
    }
    rows_written_.assign(size_t(out_features_), false);
    rows_scaled_.assign(row_source_ == WeightRowSource::Int8 ? size_t(out_features_) : 0, false);
}

void LinearWeightBuilder::mark(std::vector<bool>& marks, int64_t first_row, int64_t num_rows) {
    if (!marks.empty()) std::fill_n(marks.begin() + first_row, num_rows, true);
}

int64_t LinearWeightBuilder::pack_rows(int64_t first_row, const WeightRows& rows) {
    LMRUN_CHECK(first_row >= 0 && rows.num_rows >= 0 && first_row + rows.num_rows <= out_features_,
                "rows [%lld, %lld) outside a weight of %lld rows", static_cast<long long>(first_row),
                static_cast<long long>(first_row + rows.num_rows), static_cast<long long>(out_features_));
    if (row_source_ == WeightRowSource::Int8) {
        LMRUN_CHECK(rows.dtype == DType::I8, "this weight takes int8 rows");
    } else {
        LMRUN_CHECK(rows.dtype == DType::F32 || rows.dtype == DType::BF16 || rows.dtype == DType::F16,
                    "linear weights come as F32, BF16 or F16");
    }
    if (rows.num_rows == 0) return -1;
    allocate();
    const PackedLinear& w = state_->packed;
    const size_t tile_bytes = size_t(w.tile_elements()) * dtype_size_bytes(storage_dtype_);
    const int64_t end_row = first_row + rows.num_rows;
    const int64_t first_tile = first_row / kTileOutputs;
    const int64_t num_tiles = (end_row + kTileOutputs - 1) / kTileOutputs - first_tile;
    const auto* source = static_cast<const unsigned char*>(rows.data);
    auto* buffer = static_cast<unsigned char*>(state_->buffer.get());
    LinearWeightState& state = *state_;
    std::atomic<int64_t> first_bad_row{rows.num_rows};
    // Each thread packs whole tiles, so it writes (and first touches) its own pages.
    parallel_for(num_tiles, [&](int64_t begin, int64_t end) {
        std::vector<unsigned char> converted;
        for (int64_t t = first_tile + begin; t < first_tile + end; ++t) {
            const int64_t tile_row = t * kTileOutputs;
            const int64_t lane_begin = std::max(first_row, tile_row) - tile_row;
            const int64_t lane_end = std::min(end_row, tile_row + kTileOutputs) - tile_row;
            const int64_t src_row = tile_row + lane_begin - first_row;
            const int64_t count = lane_end - lane_begin;
            const unsigned char* src = source + size_t(src_row) * rows.row_stride_bytes;
            size_t src_stride = rows.row_stride_bytes;
            int64_t bad = -1;
            if (storage_dtype_ == DType::I8) {
                if (rows.dtype == DType::I8) {
                    copy_int8_rows(src, src_stride, count, in_features_, tile_row + lane_begin, state,
                                   converted);
                } else {
                    bad = quantize_rows(src, rows, count, in_features_, tile_row + lane_begin, state,
                                        converted);
                }
                src = converted.data();
                src_stride = size_t(in_features_);
            } else if (rows.dtype != storage_dtype_) {
                bad = convert_rows(src, rows, count, in_features_, storage_dtype_, converted);
                src = converted.data();
                src_stride = size_t(in_features_) * dtype_size_bytes(storage_dtype_);
            } else {
                // Reading each row once in order also brings the tile's rows into cache for the
                // transposing reads below.
                for (int64_t i = 0; i < count && bad < 0; ++i)
                    if (has_non_finite(src + size_t(i) * src_stride, storage_dtype_, size_t(in_features_)))
                        bad = i;
            }
            if (bad >= 0) lower_to(first_bad_row, src_row + bad);
            unsigned char* tile = buffer + size_t(t) * tile_bytes;
            pack_lanes(src, src_stride, lane_begin, lane_end, w, tile);
        }
    });
    mark(rows_written_, first_row, rows.num_rows);
    return first_bad_row.load() == rows.num_rows ? -1 : first_bad_row.load();
}

void LinearWeightBuilder::set_scales(int64_t first_row, const float* scales, int64_t count) {
    LMRUN_CHECK(row_source_ == WeightRowSource::Int8, "only int8 rows take their scales separately");
    LMRUN_CHECK(first_row >= 0 && count >= 0 && first_row + count <= out_features_,
                "scales outside the weight");
    if (count == 0) return;
    allocate();
    std::copy_n(scales, count, state_->scales.begin() + first_row);
    mark(rows_scaled_, first_row, count);
}

void LinearWeightBuilder::zero_rows(int64_t first_row, int64_t num_rows) {
    LMRUN_CHECK(first_row >= 0 && num_rows >= 0 && first_row + num_rows <= out_features_,
                "zero rows outside the weight");
    if (num_rows == 0) return;
    allocate();
    const PackedLinear& w = state_->packed;
    const size_t tile_bytes = size_t(w.tile_elements()) * dtype_size_bytes(storage_dtype_);
    auto* buffer = static_cast<unsigned char*>(state_->buffer.get());
    for (int64_t row = first_row; row < first_row + num_rows;) {
        const int64_t tile = row / kTileOutputs;
        const int64_t lane = row % kTileOutputs;
        const int64_t lanes = std::min(kTileOutputs - lane, first_row + num_rows - row);
        unsigned char* base = buffer + size_t(tile) * tile_bytes;
        for (size_t word = 0; word < tile_bytes / (4 * size_t(kTileOutputs)); ++word)  // see pack_lanes
            std::memset(base + (word * size_t(kTileOutputs) + size_t(lane)) * 4, 0, size_t(lanes) * 4);
        row += lanes;
    }
    if (storage_dtype_ == DType::I8) {
        std::fill_n(state_->scales.begin() + first_row, num_rows, 0.0f);
        std::fill_n(state_->compensation.begin() + first_row, num_rows, 0);
    }
    mark(rows_written_, first_row, num_rows);
    mark(rows_scaled_, first_row, num_rows);
}

LinearWeight LinearWeightBuilder::finish() {
    allocate();
    auto all = [](const std::vector<bool>& marks) {
        return std::all_of(marks.begin(), marks.end(), [](bool marked) { return marked; });
    };
    LMRUN_CHECK(all(rows_written_), "a linear weight was finished with rows never loaded");
    LMRUN_CHECK(all(rows_scaled_), "an int8 weight was finished with rows that have no scale");
    LinearWeight weight(std::move(state_));
    state_.reset();
    rows_written_.clear();
    rows_scaled_.clear();
    return weight;
}

}  // namespace lmrun::kernels
