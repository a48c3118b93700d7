// LinearWeightBuilder: a weight packed part by part from strided, unaligned sources of any float
// dtype holds exactly what packing the assembled matrix in one go would (checked element by
// element against the layout's definition, padding included), and reports corrupt rows. Int8
// storage: each converted row quantized exactly as quantize_row_int8_reference does (or taken
// pre-quantized, -128 clamped), with its scale and compensation, in the k-quad layout.
#include "kernels/linear_weight_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/linear_gemv.h"
#include "kernels/linear_int8.h"

namespace lmrun::kernels {
namespace {

// A [rows, cols] matrix of `dtype` stored inside a wider one ([rows, cols + extra_cols], the part
// at column `col0`) at an odd byte offset: the strided, unaligned view a checkpoint shard is.
struct SourceBlock {
    std::vector<unsigned char> bytes;
    WeightRows rows;
};

SourceBlock make_block(const std::vector<float>& values, int64_t rows, int64_t cols, DType dtype,
                       int64_t extra_cols, int64_t col0) {
    const size_t element = dtype_size_bytes(dtype);
    const int64_t stride_cols = cols + extra_cols;
    SourceBlock block;
    block.bytes.assign(1 + size_t(rows * stride_cols) * element, 0xAB);  // garbage outside the block
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            const float value = values[size_t(r * cols + c)];
            unsigned char* to = block.bytes.data() + 1 + size_t(r * stride_cols + col0 + c) * element;
            if (dtype == DType::F32) {
                std::memcpy(to, &value, 4);
            } else if (dtype == DType::I8) {
                *to = static_cast<unsigned char>(static_cast<int8_t>(value));
            } else {
                const uint16_t bits = dtype == DType::BF16 ? f32_to_bf16(value) : f32_to_f16(value);
                std::memcpy(to, &bits, 2);
            }
        }
    }
    block.rows = WeightRows{block.bytes.data() + 1 + size_t(col0) * element, dtype, rows,
                            size_t(stride_cols) * element};
    return block;
}

// The value W[n][k] must hold once stored as `storage` after arriving as `source`.
float stored_value(float value, DType source, DType storage) {
    float arrived = source == DType::BF16  ? bf16_to_f32(f32_to_bf16(value))
                    : source == DType::F16 ? f16_to_f32(f32_to_f16(value))
                                           : value;
    return storage == DType::BF16 ? bf16_to_f32(f32_to_bf16(arrived)) : arrived;
}

float packed_value(const PackedLinear& p, int64_t n, int64_t k) {
    const int64_t offset = packed_offset(p, n, k);
    if (p.dtype == DType::BF16) return bf16_to_f32(static_cast<const uint16_t*>(p.data)[offset]);
    return static_cast<const float*>(p.data)[offset];
}

struct Part {
    int64_t first_row, num_rows;
    DType dtype;
};

// Parts cut across tile boundaries (64 rows), an odd in_features, every source dtype.
TEST(LinearWeightBuilder, PartsFromStridedSourcesMatchTheLayoutWithZeroPadding) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    const int64_t out = 150, in = 37;
    std::vector<float> w(size_t(out * in));
    for (float& value : w) value = dist(rng);
    const std::vector<Part> parts = {
        {0, 40, DType::BF16}, {40, 30, DType::F32}, {70, 64, DType::F16}, {134, 16, DType::BF16}};
    for (DType storage : {DType::BF16, DType::F32}) {
        LinearWeightBuilder builder(out, in, storage);
        // Packed out of order, as a loader may (v before q).
        for (auto part = parts.rbegin(); part != parts.rend(); ++part) {
            std::vector<float> rows(w.begin() + part->first_row * in,
                                    w.begin() + (part->first_row + part->num_rows) * in);
            SourceBlock block = make_block(rows, part->num_rows, in, part->dtype, 5, 3);
            EXPECT_EQ(builder.pack_rows(part->first_row, block.rows), -1);
        }
        LinearWeight weight = builder.finish();
        const PackedLinear& p = weight.packed();
        ASSERT_EQ(p.out_features, out);
        ASSERT_GT(p.padded_in, in);
        for (int64_t n = 0; n < p.num_tiles * kTileOutputs; ++n) {
            DType source = DType::BF16;
            for (const Part& part : parts)
                if (n >= part.first_row && n < part.first_row + part.num_rows) source = part.dtype;
            for (int64_t k = 0; k < p.padded_in; ++k) {
                const float expected =
                    n < out && k < in ? stored_value(w[size_t(n * in + k)], source, storage) : 0.0f;
                ASSERT_EQ(packed_value(p, n, k), expected) << dtype_name(storage) << " " << n << "," << k;
            }
        }
    }
}

TEST(LinearWeightBuilder, PackMatchesBuildingInOneGo) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const int64_t out = 130, in = 64;
    std::vector<float> w(size_t(out * in));
    for (float& value : w) value = dist(rng);
    LinearWeight whole = LinearWeight::pack(w.data(), DType::F32, out, in, DType::BF16);
    LinearWeightBuilder builder(out, in, DType::BF16);
    for (int64_t first = 0; first < out; first += 50) {
        const int64_t count = std::min<int64_t>(50, out - first);
        builder.pack_rows(first, WeightRows{w.data() + first * in, DType::F32, count, size_t(in) * 4});
    }
    LinearWeight parts = builder.finish();
    ASSERT_EQ(parts.nbytes(), whole.nbytes());
    EXPECT_EQ(std::memcmp(parts.packed().data, whole.packed().data, whole.nbytes()), 0);
}

TEST(LinearWeightBuilder, ZeroRowsOverwriteWhatWasPacked) {
    const int64_t out = 100, in = 8;
    std::vector<float> ones(size_t(out * in), 1.0f);
    for (DType storage : {DType::BF16, DType::F32}) {
        LinearWeightBuilder builder(out, in, storage);
        builder.pack_rows(0, WeightRows{ones.data(), DType::F32, out, size_t(in) * 4});
        builder.zero_rows(60, 30);  // across the tile boundary at 64
        LinearWeight weight = builder.finish();
        for (int64_t n = 0; n < out; ++n)
            for (int64_t k = 0; k < in; ++k)
                ASSERT_EQ(packed_value(weight.packed(), n, k), n >= 60 && n < 90 ? 0.0f : 1.0f)
                    << n << "," << k;
    }
}

// NaN or Inf once converted: in the source, or made by rounding F32 to BF16 (the largest F32
// rounds up to BF16 infinity). The index is the first such row of the part.
TEST(LinearWeightBuilder, ReportsTheFirstNonFiniteRow) {
    const int64_t out = 130, in = 4;
    std::vector<float> w(size_t(out * in), 0.5f);
    w[size_t(100 * in + 2)] = std::numeric_limits<float>::quiet_NaN();
    w[size_t(120 * in + 1)] = std::numeric_limits<float>::infinity();
    LinearWeightBuilder f32(out, in, DType::F32);
    EXPECT_EQ(f32.pack_rows(0, WeightRows{w.data(), DType::F32, out, size_t(in) * 4}), 100);
    EXPECT_EQ(f32.pack_rows(0, WeightRows{w.data(), DType::F32, 100, size_t(in) * 4}), -1);
    EXPECT_EQ(f32.pack_rows(110, WeightRows{w.data() + 110 * in, DType::F32, 20, size_t(in) * 4}), 10);

    std::vector<float> large(size_t(out * in), 0.5f);
    large[size_t(70 * in)] = std::numeric_limits<float>::max();
    LinearWeightBuilder bf16(out, in, DType::BF16);
    EXPECT_EQ(bf16.pack_rows(0, WeightRows{large.data(), DType::F32, out, size_t(in) * 4}), 70);
    LinearWeightBuilder kept_f32(out, in, DType::F32);
    EXPECT_EQ(kept_f32.pack_rows(0, WeightRows{large.data(), DType::F32, out, size_t(in) * 4}), -1);
}

int8_t packed_int8(const PackedLinear& p, int64_t n, int64_t k) {
    return static_cast<const int8_t*>(p.data)[packed_offset(p, n, k)];
}

// Every int8 element, scale and compensation of `p` against the rows it must hold (`q` [out, in]
// and `scales`), padding lanes and padded k zero.
void expect_int8_layout(const PackedLinear& p, const std::vector<int8_t>& q, const std::vector<float>& scales,
                        int64_t out, int64_t in) {
    ASSERT_EQ(p.dtype, DType::I8);
    ASSERT_EQ(p.out_features, out);
    ASSERT_EQ(p.padded_in % kInt8InPadding, 0);
    for (int64_t n = 0; n < p.num_tiles * kTileOutputs; ++n) {
        int32_t sum = 0;
        for (int64_t k = 0; k < p.padded_in; ++k) {
            const int8_t expected = n < out && k < in ? q[size_t(n * in + k)] : int8_t(0);
            ASSERT_EQ(packed_int8(p, n, k), expected) << n << "," << k;
            sum += expected;
        }
        ASSERT_EQ(p.scales[n], n < out ? scales[size_t(n)] : 0.0f) << n;
        ASSERT_EQ(p.compensation[n], 128 * sum) << n;
    }
}

// Float rows (every source dtype, strided and unaligned, cut across tiles, an in_features that
// ends mid-quad, an all-zero row) are quantized row by row exactly as the reference does.
TEST(LinearWeightBuilder, Int8StorageQuantizesEachRowLikeTheReference) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    const int64_t out = 150, in = 70;
    std::vector<float> w(size_t(out * in));
    for (float& value : w) value = dist(rng);
    std::fill_n(w.begin() + 65 * in, in, 0.0f);  // scale 0, all q 0
    const std::vector<Part> parts = {
        {0, 40, DType::BF16}, {40, 30, DType::F32}, {70, 64, DType::F16}, {134, 16, DType::BF16}};
    LinearWeightBuilder builder(out, in, DType::I8);
    std::vector<int8_t> q(size_t(out * in));
    std::vector<float> scales(static_cast<size_t>(out));
    for (auto part = parts.rbegin(); part != parts.rend(); ++part) {
        std::vector<float> rows(w.begin() + part->first_row * in,
                                w.begin() + (part->first_row + part->num_rows) * in);
        SourceBlock block = make_block(rows, part->num_rows, in, part->dtype, 5, 3);
        EXPECT_EQ(builder.pack_rows(part->first_row, block.rows), -1);
        for (int64_t n = part->first_row; n < part->first_row + part->num_rows; ++n) {
            std::vector<float> arrived(static_cast<size_t>(in));
            for (int64_t k = 0; k < in; ++k)
                arrived[size_t(k)] = stored_value(w[size_t(n * in + k)], part->dtype, DType::F32);
            scales[size_t(n)] = quantize_row_int8_reference(arrived.data(), in, q.data() + n * in);
        }
    }
    EXPECT_EQ(scales[65], 0.0f);
    LinearWeight weight = builder.finish();
    expect_int8_layout(weight.packed(), q, scales, out, in);
    // LinearWeight::pack to I8: the same, the whole F32 matrix at once.
    LinearWeight whole = LinearWeight::pack(w.data(), DType::F32, out, in, DType::I8);
    ASSERT_EQ(whole.nbytes(), weight.nbytes());
    for (int64_t n = 0; n < out; ++n)
        scales[size_t(n)] = quantize_row_int8_reference(w.data() + n * in, in, q.data() + n * in);
    expect_int8_layout(whole.packed(), q, scales, out, in);
}

// Pre-quantized rows (a compressed-tensors checkpoint): copied as they are, -128 clamped to -127,
// scales given before or after the rows; pack_int8 holds the same bytes.
TEST(LinearWeightBuilder, Int8RowsArePlacedWithTheirScales) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> dist(-128, 127);
    const int64_t out = 100, in = 131;
    std::vector<int8_t> raw(size_t(out * in));
    for (int8_t& value : raw) value = static_cast<int8_t>(dist(rng));
    raw[5] = -128;
    std::vector<float> scales(static_cast<size_t>(out));
    for (int64_t n = 0; n < out; ++n) scales[size_t(n)] = 0.01f * float(n + 1);
    std::vector<int8_t> clamped(raw);
    for (int8_t& value : clamped) value = value < -127 ? int8_t(-127) : value;

    LinearWeightBuilder builder(out, in, DType::I8, WeightRowSource::Int8);
    builder.set_scales(0, scales.data(), 30);  // before its rows
    for (int64_t first : {60, 0}) {
        const int64_t count = first == 0 ? 60 : out - 60;
        std::vector<float> values(raw.begin() + first * in, raw.begin() + (first + count) * in);
        SourceBlock block = make_block(values, count, in, DType::I8, 9, 4);
        EXPECT_EQ(builder.pack_rows(first, block.rows), -1);
    }
    builder.set_scales(30, scales.data() + 30, out - 30);  // after
    LinearWeight weight = builder.finish();
    expect_int8_layout(weight.packed(), clamped, scales, out, in);

    LinearWeight whole = LinearWeight::pack_int8(raw.data(), scales.data(), out, in);
    ASSERT_EQ(whole.nbytes(), weight.nbytes());
    expect_int8_layout(whole.packed(), clamped, scales, out, in);
}

// Zeroed rows (vocabulary padding) hold zeros with scale and compensation 0, and a row holding
// NaN or Inf is reported and left zero (no int8 stands for it).
TEST(LinearWeightBuilder, Int8ZeroAndNonFiniteRows) {
    const int64_t out = 100, in = 8;
    std::vector<float> w(size_t(out * in), 1.5f);
    w[size_t(20 * in + 3)] = std::numeric_limits<float>::infinity();
    w[size_t(30 * in + 1)] = std::numeric_limits<float>::quiet_NaN();
    LinearWeightBuilder builder(out, in, DType::I8);
    EXPECT_EQ(builder.pack_rows(0, WeightRows{w.data(), DType::F32, out, size_t(in) * 4}), 20);
    builder.zero_rows(60, 30);  // across the tile boundary at 64
    LinearWeight weight = builder.finish();
    std::vector<int8_t> q(size_t(out * in), 127);
    std::vector<float> scales(size_t(out), 1.5f / 127.0f);
    for (int64_t n : {20, 30}) {
        std::fill_n(q.begin() + n * in, in, 0);
        scales[size_t(n)] = 0.0f;
    }
    std::fill_n(q.begin() + 60 * in, 30 * in, 0);
    std::fill_n(scales.begin() + 60, 30, 0.0f);
    expect_int8_layout(weight.packed(), q, scales, out, in);
}

}  // namespace
}  // namespace lmrun::kernels
