// LinearWeightBuilder: a weight packed part by part from strided, unaligned sources of any float
// dtype holds exactly what packing the assembled matrix in one go would (checked element by
// element against the layout's definition, padding included), and reports corrupt rows.
#include "kernels/linear_weight_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/linear_gemv.h"

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

}  // namespace
}  // namespace lmrun::kernels
