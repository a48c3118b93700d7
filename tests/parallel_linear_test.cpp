// int8 checkpoint layers under tensor parallelism: per-channel scales shard with the output
// rows (column-parallel, q/k/v, merged gate/up) and are whole on every rank for row-parallel
// layers (their outputs are not split).
#include "model/parallel_linear.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/linear_gemv.h"

namespace lmrun {
namespace {

struct Int8Source {
    std::vector<int8_t> q;
    std::vector<float> scales;
    TensorInfo weight, scale;
};

// [rows, cols] int8 with q[r][c] = (r + c) % 100 - 50 and scale[r] = r + 1.
Int8Source make_source(const std::string& name, int64_t rows, int64_t cols) {
    Int8Source source;
    source.q.resize(static_cast<size_t>(rows * cols));
    source.scales.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        source.scales[r] = float(r + 1);
        for (int64_t c = 0; c < cols; ++c) source.q[r * cols + c] = int8_t((r + c) % 100 - 50);
    }
    source.weight = {name + ".weight", DType::I8, {rows, cols}, source.q.data(), source.q.size(), "mem"};
    source.scale = {name + ".weight_scale",   DType::F32, {rows, 1}, source.scales.data(),
                    source.scales.size() * 4, "mem"};
    return source;
}

// Packed weight row `row` of `layer` holds source row `src_row`, columns [col0, col0 + in).
void expect_row(const LinearBase& layer, int64_t row, const Int8Source& src, int64_t src_row, int64_t col0) {
    const kernels::PackedLinear& packed = layer.packed().packed();
    ASSERT_EQ(packed.dtype, DType::I8);
    EXPECT_EQ(packed.scales[row], src.scales[src_row]) << "row " << row;
    const int64_t src_cols = src.weight.shape[1];
    for (int64_t k = 0; k < layer.in_features(); ++k) {
        ASSERT_EQ(static_cast<const int8_t*>(packed.data)[kernels::packed_offset(packed, row, k)],
                  src.q[src_row * src_cols + col0 + k])
            << "row " << row << " k " << k;
    }
}

TEST(ParallelLinearInt8, ScalesShardWithTheOutputRows) {
    const ParallelConfig rank1{1, 2};
    Int8Source column = make_source("col", 128, 40);
    ColumnParallelLinear col(128, 40, false, DType::BF16, rank1);
    col.set_quantization(LinearQuant::Int8Checkpoint);
    ASSERT_TRUE(col.load_weight(column.weight).ok());
    ASSERT_TRUE(col.load_weight_scale(column.scale).ok());
    col.finalize();
    for (int64_t row : {0, 1, 63}) expect_row(col, row, column, 64 + row, 0);

    Int8Source row_src = make_source("row", 48, 80);
    RowParallelLinear row_layer(48, 80, false, DType::BF16, rank1);
    row_layer.set_quantization(LinearQuant::Int8Checkpoint);
    ASSERT_TRUE(row_layer.load_weight(row_src.weight).ok());
    ASSERT_TRUE(row_layer.load_weight_scale(row_src.scale).ok());
    row_layer.finalize();
    for (int64_t row : {0, 47}) expect_row(row_layer, row, row_src, row, 40);

    // q: 4 heads, k/v: 2 heads, head_dim 8 → rank 1 holds q heads 2-3, kv head 1.
    Int8Source q = make_source("q", 32, 24), k = make_source("k", 16, 24), v = make_source("v", 16, 24);
    QKVParallelLinear qkv(24, 8, 4, 2, false, DType::BF16, rank1);
    qkv.set_quantization(LinearQuant::Int8Checkpoint);
    for (auto [src, shard] :
         {std::pair{&q, QkvShard::Q}, std::pair{&k, QkvShard::K}, std::pair{&v, QkvShard::V}}) {
        ASSERT_TRUE(qkv.load_weight(src->weight, shard).ok());
        ASSERT_TRUE(qkv.load_weight_scale(src->scale, shard).ok());
    }
    qkv.finalize();
    expect_row(qkv, 0, q, 16, 0);  // first local q row = q head 2
    expect_row(qkv, 16, k, 8, 0);  // first local k row = k head 1
    expect_row(qkv, 24, v, 8, 0);  // first local v row = v head 1

    Int8Source gate = make_source("gate", 64, 16), up = make_source("up", 64, 16);
    MergedColumnParallelLinear gate_up(16, {64, 64}, DType::BF16, rank1);
    gate_up.set_quantization(LinearQuant::Int8Checkpoint);
    ASSERT_TRUE(gate_up.load_weight(gate.weight, 0).ok());
    ASSERT_TRUE(gate_up.load_weight_scale(gate.scale, 0).ok());
    ASSERT_TRUE(gate_up.load_weight(up.weight, 1).ok());
    ASSERT_TRUE(gate_up.load_weight_scale(up.scale, 1).ok());
    gate_up.finalize();
    expect_row(gate_up, 0, gate, 32, 0);
    expect_row(gate_up, 32, up, 32, 0);
}

TEST(ParallelLinearInt8, QuantizesFloatWeightsAtFinalize) {
    std::vector<float> w(static_cast<size_t>(10 * 7));
    for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 13) - 6) * 0.25f;
    TensorInfo src{"w.weight", DType::F32, {10, 7}, w.data(), w.size() * 4, "mem"};
    ColumnParallelLinear layer(10, 7, false, DType::BF16, ParallelConfig{});
    layer.set_quantization(LinearQuant::Int8AtLoad);
    ASSERT_TRUE(layer.load_weight(src).ok());
    layer.finalize();
    const kernels::PackedLinear& packed = layer.packed().packed();
    ASSERT_EQ(packed.dtype, DType::I8);
    for (int64_t n = 0; n < 10; ++n) {
        for (int64_t k = 0; k < 7; ++k) {
            const float dequantized =
                float(static_cast<const int8_t*>(packed.data)[kernels::packed_offset(packed, n, k)]) *
                packed.scales[n];
            EXPECT_NEAR(dequantized, w[n * 7 + k], packed.scales[n] / 2 + 1e-7f);
        }
    }
}

}  // namespace
}  // namespace lmrun
