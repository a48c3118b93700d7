#include "model/weight_loader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <numeric>

#include "kernels/linear_gemv.h"

namespace lmrun {
namespace {

// An in-memory checkpoint tensor holding 0, 1, 2, ... (as F32).
struct FakeTensor {
    std::vector<float> values;
    TensorInfo info;
    FakeTensor(std::string name, std::vector<int64_t> shape) {
        int64_t numel = 1;
        for (int64_t dim : shape) numel *= dim;
        values.resize(size_t(numel));
        std::iota(values.begin(), values.end(), 0.0f);
        info = TensorInfo{std::move(name), DType::F32,        std::move(shape),
                          values.data(),   values.size() * 4, "mem.safetensors"};
    }
};

std::vector<float> to_vector(const Tensor& tensor) {
    const float* data = tensor.data<float>();
    return std::vector<float>(data, data + tensor.numel());
}

std::vector<float> range(float begin, float end) {
    std::vector<float> values;
    for (float v = begin; v < end; ++v) values.push_back(v);
    return values;
}

std::vector<float> concat_floats(std::initializer_list<std::vector<float>> parts) {
    std::vector<float> all;
    for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
    return all;
}

ParallelConfig rank(int r, int size) {
    return ParallelConfig{r, size};
}

TEST(WeightLoader, ReplicatedCopiesF32) {
    FakeTensor src("norm.weight", {2, 3});
    Tensor dst = Tensor::zeros(DType::F32, {2, 3});
    ASSERT_TRUE(load_replicated(src.info, dst).ok());
    EXPECT_EQ(to_vector(dst), range(0, 6));
}

TEST(WeightLoader, ConvertsBf16AndF16ToF32) {
    // 1.0, -2.0, 0.5, 3.140625 in BF16 and 1.0, -2.0, 0.5, 65504 in F16 (IEEE bit patterns).
    std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x3f00, 0x4049};
    std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x3800, 0x7bff};
    TensorInfo bf16_src{"b", DType::BF16, {4}, bf16.data(), 8, "mem"};
    TensorInfo f16_src{"h", DType::F16, {4}, f16.data(), 8, "mem"};
    Tensor dst = Tensor::zeros(DType::F32, {4});
    ASSERT_TRUE(load_replicated(bf16_src, dst).ok());
    EXPECT_EQ(to_vector(dst), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.140625f}));
    ASSERT_TRUE(load_replicated(f16_src, dst).ok());
    EXPECT_EQ(to_vector(dst), (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f}));
}

TEST(WeightLoader, ConvertsF32ToBf16WithRoundToNearestEven) {
    // 1 + 2^-8 is a tie -> 1.0 (even); 1 + 3*2^-8 is a tie -> 1 + 2^-6 (even mantissa).
    std::vector<float> values = {1.0f, -2.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256};
    TensorInfo src{"w", DType::F32, {4}, values.data(), 16, "mem"};
    Tensor dst = Tensor::zeros(DType::BF16, {4});
    ASSERT_TRUE(load_replicated(src, dst).ok());
    const uint16_t* bits = dst.data<uint16_t>();
    EXPECT_EQ(std::vector<uint16_t>(bits, bits + 4), (std::vector<uint16_t>{0x3f80, 0xc000, 0x3f80, 0x3f82}));
}

TEST(WeightLoader, ConvertsUnalignedSource) {
    // safetensors only promises byte offsets: a BF16 tensor may start at an odd address.
    std::vector<unsigned char> bytes = {0xff, 0x80, 0x3f, 0x00, 0xc0};
    TensorInfo src{"w", DType::BF16, {2}, bytes.data() + 1, 4, "mem"};
    Tensor dst = Tensor::zeros(DType::F32, {2});
    ASSERT_TRUE(load_replicated(src, dst).ok());
    EXPECT_EQ(to_vector(dst), (std::vector<float>{1.0f, -2.0f}));
}

TEST(WeightLoader, ColumnParallelHalvesReassemble) {
    FakeTensor weight("w", {4, 3});
    FakeTensor bias("b", {4});
    std::vector<float> weight_parts, bias_parts;
    for (int r = 0; r < 2; ++r) {
        Tensor w = Tensor::zeros(DType::F32, {2, 3});
        Tensor b = Tensor::zeros(DType::F32, {2});
        ASSERT_TRUE(load_column_parallel(weight.info, w, rank(r, 2)).ok());
        ASSERT_TRUE(load_column_parallel(bias.info, b, rank(r, 2)).ok());
        weight_parts = concat_floats({weight_parts, to_vector(w)});
        bias_parts = concat_floats({bias_parts, to_vector(b)});
    }
    EXPECT_EQ(weight_parts, weight.values);
    EXPECT_EQ(bias_parts, bias.values);
    Tensor full = Tensor::zeros(DType::F32, {4, 3});
    ASSERT_TRUE(load_column_parallel(weight.info, full, rank(0, 1)).ok());
    EXPECT_EQ(to_vector(full), weight.values);
}

TEST(WeightLoader, RowParallelSplitsColumnsAndReplicatesBias) {
    FakeTensor weight("w", {2, 4});  // rows 0..3 and 4..7
    Tensor r0 = Tensor::zeros(DType::F32, {2, 2});
    Tensor r1 = Tensor::zeros(DType::F32, {2, 2});
    ASSERT_TRUE(load_row_parallel(weight.info, r0, rank(0, 2)).ok());
    ASSERT_TRUE(load_row_parallel(weight.info, r1, rank(1, 2)).ok());
    EXPECT_EQ(to_vector(r0), (std::vector<float>{0, 1, 4, 5}));
    EXPECT_EQ(to_vector(r1), (std::vector<float>{2, 3, 6, 7}));
    FakeTensor bias("b", {2});
    Tensor b = Tensor::zeros(DType::F32, {2});
    ASSERT_TRUE(load_row_parallel(bias.info, b, rank(1, 2)).ok());
    EXPECT_EQ(to_vector(b), bias.values);
}

// q: 4 heads, k/v: `kv` heads, head_dim 2, in 1 => rows are head-major values.
TEST(WeightLoader, QkvPackedTp1) {
    FakeTensor q("q", {8, 1}), k("k", {4, 1}), v("v", {4, 1});
    for (float& x : k.values) x += 100;
    for (float& x : v.values) x += 200;
    Tensor dst = Tensor::zeros(DType::F32, {16, 1});
    ASSERT_TRUE(load_qkv_shard(q.info, dst, QkvShard::Q, 4, 2, 2, rank(0, 1)).ok());
    ASSERT_TRUE(load_qkv_shard(k.info, dst, QkvShard::K, 4, 2, 2, rank(0, 1)).ok());
    ASSERT_TRUE(load_qkv_shard(v.info, dst, QkvShard::V, 4, 2, 2, rank(0, 1)).ok());
    EXPECT_EQ(to_vector(dst), concat_floats({q.values, k.values, v.values}));
}

TEST(WeightLoader, QkvTp2SplitsHeads) {
    FakeTensor q("q", {8, 1}), k("k", {4, 1}), v("v", {4, 1});
    for (float& x : k.values) x += 100;
    for (float& x : v.values) x += 200;
    for (int r = 0; r < 2; ++r) {
        Tensor dst = Tensor::zeros(DType::F32, {8, 1});  // (4/2 + 2*1) heads * 2
        ASSERT_TRUE(load_qkv_shard(q.info, dst, QkvShard::Q, 4, 2, 2, rank(r, 2)).ok());
        ASSERT_TRUE(load_qkv_shard(k.info, dst, QkvShard::K, 4, 2, 2, rank(r, 2)).ok());
        ASSERT_TRUE(load_qkv_shard(v.info, dst, QkvShard::V, 4, 2, 2, rank(r, 2)).ok());
        float q0 = 4.0f * r, kv0 = 2.0f * r;
        EXPECT_EQ(to_vector(dst), (std::vector<float>{q0, q0 + 1, q0 + 2, q0 + 3, 100 + kv0, 101 + kv0,
                                                      200 + kv0, 201 + kv0}))
            << "rank " << r;
    }
}

TEST(WeightLoader, QkvReplicatesKvHeadsWhenFewerThanRanks) {
    // 4 q heads, 2 kv heads, tp 4: ranks 0,1 share kv head 0; ranks 2,3 share kv head 1.
    FakeTensor q("q", {8}), k("k", {4}), v("v", {4});  // 1-D biases
    for (float& x : v.values) x += 200;
    for (int r = 0; r < 4; ++r) {
        Tensor dst = Tensor::zeros(DType::F32, {6});  // (1 + 2*1) heads * 2
        ASSERT_TRUE(load_qkv_shard(q.info, dst, QkvShard::Q, 4, 2, 2, rank(r, 4)).ok());
        ASSERT_TRUE(load_qkv_shard(k.info, dst, QkvShard::K, 4, 2, 2, rank(r, 4)).ok());
        ASSERT_TRUE(load_qkv_shard(v.info, dst, QkvShard::V, 4, 2, 2, rank(r, 4)).ok());
        float q0 = 2.0f * r, kv0 = 2.0f * (r / 2);
        EXPECT_EQ(to_vector(dst), (std::vector<float>{q0, q0 + 1, kv0, kv0 + 1, 200 + kv0, 201 + kv0}))
            << "rank " << r;
    }
    // One kv head (MQA) over tp 2: both ranks hold it.
    FakeTensor k1("k", {2, 1});
    for (int r = 0; r < 2; ++r) {
        Tensor dst = Tensor::zeros(DType::F32, {8, 1});
        ASSERT_TRUE(load_qkv_shard(k1.info, dst, QkvShard::K, 4, 1, 2, rank(r, 2)).ok());
        EXPECT_EQ(to_vector(dst), (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 0})) << "rank " << r;
    }
}

TEST(WeightLoader, MergedColumnGateUpTp2) {
    FakeTensor gate("gate", {6, 2}), up("up", {6, 2});
    for (float& x : up.values) x += 100;
    std::vector<int64_t> sizes = {6, 6};
    std::vector<float> gate_parts, up_parts;
    for (int r = 0; r < 2; ++r) {
        Tensor dst = Tensor::zeros(DType::F32, {6, 2});
        ASSERT_TRUE(load_merged_column_shard(gate.info, dst, 0, sizes, rank(r, 2)).ok());
        ASSERT_TRUE(load_merged_column_shard(up.info, dst, 1, sizes, rank(r, 2)).ok());
        std::vector<float> values = to_vector(dst);
        gate_parts.insert(gate_parts.end(), values.begin(), values.begin() + 6);
        up_parts.insert(up_parts.end(), values.begin() + 6, values.end());
    }
    EXPECT_EQ(gate_parts, gate.values);
    EXPECT_EQ(up_parts, up.values);
}

TEST(WeightLoader, VocabParallelPadsWithZeros) {
    FakeTensor embed("embed", {5, 2});
    Tensor r0 = Tensor::zeros(DType::F32, {3, 2});
    Tensor r1 = Tensor::zeros(DType::F32, {3, 2});
    std::fill(r1.data<float>(), r1.data<float>() + 6, -7.0f);  // the padding row must be overwritten
    ASSERT_TRUE(load_vocab_parallel(embed.info, r0, rank(0, 2)).ok());
    ASSERT_TRUE(load_vocab_parallel(embed.info, r1, rank(1, 2)).ok());
    EXPECT_EQ(to_vector(r0), (std::vector<float>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(to_vector(r1), (std::vector<float>{6, 7, 8, 9, 0, 0}));
    Tensor bf16 = Tensor::zeros(DType::BF16, {5, 2});
    ASSERT_TRUE(load_vocab_parallel(embed.info, bf16, rank(0, 1)).ok());
    EXPECT_EQ(bf16.data<uint16_t>()[9], 0x4110);  // 9.0
}

// Loading into a LinearWeightBuilder packs the same shard the tensor path copies: each loader's
// rows, converted to the storage dtype, at the same places (rank 1 of 2, F32 source, BF16 held).
TEST(WeightLoader, PackedShardsMatchTheTensorPath) {
    using kernels::LinearWeight;
    using kernels::LinearWeightBuilder;
    auto expect_same = [](const Tensor& tensor, LinearWeightBuilder& builder) {
        LinearWeight from_tensor =
            LinearWeight::pack(tensor.raw(), tensor.dtype(), tensor.dim(0), tensor.dim(1), DType::BF16);
        LinearWeight packed = builder.finish();
        ASSERT_EQ(packed.nbytes(), from_tensor.nbytes());
        EXPECT_EQ(std::memcmp(packed.packed().data, from_tensor.packed().data, packed.nbytes()), 0);
    };
    FakeTensor w("w", {130, 6});
    Tensor column = Tensor::zeros(DType::BF16, {65, 6});
    LinearWeightBuilder column_packed(65, 6, DType::BF16);
    ASSERT_TRUE(load_column_parallel(w.info, column, rank(1, 2)).ok());
    ASSERT_TRUE(load_column_parallel(w.info, column_packed, rank(1, 2)).ok());
    expect_same(column, column_packed);

    Tensor row = Tensor::zeros(DType::BF16, {130, 3});
    LinearWeightBuilder row_packed(130, 3, DType::BF16);
    ASSERT_TRUE(load_row_parallel(w.info, row, rank(1, 2)).ok());
    ASSERT_TRUE(load_row_parallel(w.info, row_packed, rank(1, 2)).ok());
    expect_same(row, row_packed);

    // 4 q heads and 2 kv heads of 40 rows: rank 1 holds q heads 2-3 and kv head 1 (160 rows).
    FakeTensor q("q", {160, 6}), k("k", {80, 6}), v("v", {80, 6});
    Tensor qkv = Tensor::zeros(DType::BF16, {160, 6});
    LinearWeightBuilder qkv_packed(160, 6, DType::BF16);
    for (auto [src, shard] :
         {std::pair{&v, QkvShard::V}, std::pair{&q, QkvShard::Q}, std::pair{&k, QkvShard::K}}) {
        ASSERT_TRUE(load_qkv_shard(src->info, qkv, shard, 4, 2, 40, rank(1, 2)).ok());
        ASSERT_TRUE(load_qkv_shard(src->info, qkv_packed, shard, 4, 2, 40, rank(1, 2)).ok());
    }
    expect_same(qkv, qkv_packed);

    std::vector<int64_t> sizes = {130, 130};
    Tensor merged = Tensor::zeros(DType::BF16, {130, 6});
    LinearWeightBuilder merged_packed(130, 6, DType::BF16);
    for (int index = 0; index < 2; ++index) {
        ASSERT_TRUE(load_merged_column_shard(w.info, merged, index, sizes, rank(1, 2)).ok());
        ASSERT_TRUE(load_merged_column_shard(w.info, merged_packed, index, sizes, rank(1, 2)).ok());
    }
    expect_same(merged, merged_packed);

    // 130 vocab rows over 2 ranks of 66: rank 1 holds 64 rows and 2 padding rows.
    Tensor vocab = Tensor::zeros(DType::BF16, {66, 6});
    LinearWeightBuilder vocab_packed(66, 6, DType::BF16);
    ASSERT_TRUE(load_vocab_parallel(w.info, vocab, rank(1, 2)).ok());
    ASSERT_TRUE(load_vocab_parallel(w.info, vocab_packed, rank(1, 2)).ok());
    expect_same(vocab, vocab_packed);
}

TEST(WeightLoader, NonFiniteWeightIsCorruptInBothPaths) {
    FakeTensor w("model.layers.3.mlp.down_proj.weight", {70, 4});
    w.values[69 * 4 + 1] = std::numeric_limits<float>::quiet_NaN();
    Tensor dst = Tensor::zeros(DType::BF16, {70, 4});
    kernels::LinearWeightBuilder packed(70, 4, DType::BF16);
    for (const Status& status :
         {load_column_parallel(w.info, dst, rank(0, 1)), load_column_parallel(w.info, packed, rank(0, 1))}) {
        ASSERT_FALSE(status.ok());
        EXPECT_EQ(status.error().kind, ErrorKind::Corrupt);
        EXPECT_NE(status.error().message.find("down_proj.weight' holds NaN or Inf values (row 69"),
                  std::string::npos)
            << status.error().message;
    }
}

void expect_status_error(const Status& status, std::initializer_list<std::string> needles) {
    ASSERT_FALSE(status.ok());
    for (const std::string& needle : needles)
        EXPECT_NE(status.error().message.find(needle), std::string::npos) << status.error().message;
}

TEST(WeightLoader, ShapeMismatchNamesFileTensorAndShapes) {
    FakeTensor src("model.layers.0.mlp.up_proj.weight", {4, 3});
    Tensor dst = Tensor::zeros(DType::F32, {4, 2});
    expect_status_error(
        load_replicated(src.info, dst),
        {"mem.safetensors", "model.layers.0.mlp.up_proj.weight", "[4, 3]", "expected [4, 2]"});
    Tensor half = Tensor::zeros(DType::F32, {3, 3});
    expect_status_error(load_column_parallel(src.info, half, rank(0, 2)),
                        {"mem.safetensors", "[4, 3]", "expected [6, 3]", "tp_size 2"});
    Tensor cols = Tensor::zeros(DType::F32, {4, 1});
    expect_status_error(load_row_parallel(src.info, cols, rank(0, 2)), {"[4, 3]", "expected [4, 2]"});
    Tensor qkv = Tensor::zeros(DType::F32, {8, 3});
    expect_status_error(load_qkv_shard(src.info, qkv, QkvShard::K, 2, 1, 2, rank(0, 1)),
                        {"[4, 3]", "expected [2, 3]"});
    Tensor merged = Tensor::zeros(DType::F32, {10, 3});
    std::vector<int64_t> sizes = {5, 5};
    expect_status_error(load_merged_column_shard(src.info, merged, 1, sizes, rank(0, 1)),
                        {"[4, 3]", "expected [5, 3]"});
    Tensor vocab = Tensor::zeros(DType::F32, {1, 3});
    expect_status_error(load_vocab_parallel(src.info, vocab, rank(0, 2)), {"[4, 3]", "expected [<= 2, 3]"});
}

TEST(WeightLoader, RejectsBadInputs) {
    std::vector<int32_t> ids = {1, 2};
    TensorInfo int_src{"ids", DType::I32, {2}, ids.data(), 8, "mem"};
    Tensor dst = Tensor::zeros(DType::F32, {2});
    expect_status_error(load_replicated(int_src, dst), {"ids", "I32", "float"});
    FakeTensor q("q", {6, 1});
    Tensor qkv = Tensor::zeros(DType::F32, {6, 1});
    expect_status_error(load_qkv_shard(q.info, qkv, QkvShard::Q, 3, 3, 1, rank(0, 2)),
                        {"cannot be split", "tp_size 2"});
    FakeTensor w("w", {4});
    Tensor half = Tensor::zeros(DType::F32, {2});
    expect_status_error(load_column_parallel(w.info, half, rank(2, 2)), {"invalid tensor-parallel rank 2"});
}

}  // namespace
}  // namespace lmrun
