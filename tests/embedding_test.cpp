#include "kernels/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/linear.h"

namespace lmrun::kernels {
namespace {

TEST(Embedding, CopiesRowsOfF32AndBf16Tables) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    int64_t vocab = 50, dim = 17;
    std::vector<float> table(size_t(vocab * dim));
    for (float& v : table) v = dist(rng);
    std::vector<uint16_t> table_bf16(table.size());
    for (size_t i = 0; i < table.size(); ++i) table_bf16[i] = f32_to_bf16(table[i]);
    std::vector<int32_t> ids = {0, 49, 7, 7, 23};
    std::vector<float> out(ids.size() * dim), out_bf16(out.size());
    embedding_lookup(ids.data(), int64_t(ids.size()), table.data(), DType::F32, vocab, dim, out.data());
    embedding_lookup(ids.data(), int64_t(ids.size()), table_bf16.data(), DType::BF16, vocab, dim,
                     out_bf16.data());
    for (size_t t = 0; t < ids.size(); ++t) {
        for (int64_t d = 0; d < dim; ++d) {
            ASSERT_EQ(out[t * dim + d], table[ids[t] * dim + d]);
            ASSERT_EQ(out_bf16[t * dim + d], bf16_to_f32(table_bf16[ids[t] * dim + d]));
        }
    }
}

TEST(Embedding, ManyTokensInParallel) {
    int64_t vocab = 1000, dim = 256, num_tokens = 700;
    std::vector<float> table(size_t(vocab * dim));
    for (size_t i = 0; i < table.size(); ++i) table[i] = float(i);
    std::vector<int32_t> ids(static_cast<size_t>(num_tokens));
    for (int64_t t = 0; t < num_tokens; ++t) ids[t] = int32_t((t * 37) % vocab);
    std::vector<float> out(size_t(num_tokens * dim));
    embedding_lookup(ids.data(), num_tokens, table.data(), DType::F32, vocab, dim, out.data());
    for (int64_t t = 0; t < num_tokens; ++t)
        for (int64_t d = 0; d < dim; ++d) ASSERT_EQ(out[t * dim + d], float(ids[t] * dim + d));
}

// A tied table is looked up in the packed LM head: same rows as the plain table, for odd
// vocab/dim (partial tiles, odd k-pairs), both storage types, serial and parallel sizes.
TEST(Embedding, PackedHeadRowsMatchThePlainTable) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (DType storage : {DType::F32, DType::BF16}) {
        for (auto [vocab, dim, num_tokens] :
             {std::tuple<int64_t, int64_t, int64_t>{67, 33, 9}, {130, 257, 600}}) {
            std::vector<float> table(size_t(vocab * dim));
            for (float& v : table) v = dist(rng);
            if (storage == DType::BF16)
                for (float& v : table) v = bf16_to_f32(f32_to_bf16(v));
            LinearWeight head = LinearWeight::pack(table.data(), DType::F32, vocab, dim, storage);
            std::vector<int32_t> ids(static_cast<size_t>(num_tokens));
            for (int64_t t = 0; t < num_tokens; ++t) ids[t] = int32_t((t * 53 + 5) % vocab);
            ids[0] = int32_t(vocab - 1);
            std::vector<float> want(size_t(num_tokens * dim)), got(want.size(), NAN);
            embedding_lookup(ids.data(), num_tokens, table.data(), DType::F32, vocab, dim, want.data());
            embedding_lookup_packed(ids.data(), num_tokens, head.packed(), got.data());
            ASSERT_EQ(got, want) << dtype_name(storage) << " vocab " << vocab << " dim " << dim;
        }
    }
}

// A vocab-parallel shard holds rows [first_id, first_id + rows): its ids are looked up, every
// other id gives a zero row, in the plain and the packed table; the shards of two ranks sum
// to the whole table's lookup.
TEST(Embedding, VocabShardLooksUpItsRowsAndZerosTheOthers) {
    const int64_t vocab = 70, dim = 19, shard_rows = 35;
    std::vector<float> table(size_t(vocab * dim));
    for (size_t i = 0; i < table.size(); ++i) table[i] = float(i % 97) - 40.0f;
    std::vector<int32_t> ids = {0, 34, 35, 69, 3, 50};
    const int64_t num_tokens = int64_t(ids.size());
    std::vector<float> whole(size_t(num_tokens * dim));
    embedding_lookup(ids.data(), num_tokens, table.data(), DType::F32, vocab, dim, whole.data());
    std::vector<float> sum(whole.size(), 0.0f), sum_packed(whole.size(), 0.0f);
    for (int64_t rank = 0; rank < 2; ++rank) {
        const float* shard = table.data() + rank * shard_rows * dim;
        LinearWeight packed = LinearWeight::pack(shard, DType::F32, shard_rows, dim, DType::F32);
        std::vector<float> out(whole.size(), NAN), out_packed(whole.size(), NAN);
        embedding_lookup(ids.data(), num_tokens, shard, DType::F32, shard_rows, dim, out.data(),
                         rank * shard_rows);
        embedding_lookup_packed(ids.data(), num_tokens, packed.packed(), out_packed.data(),
                                rank * shard_rows);
        for (int64_t t = 0; t < num_tokens; ++t) {
            const bool mine = ids[t] >= rank * shard_rows && ids[t] < (rank + 1) * shard_rows;
            for (int64_t d = 0; d < dim; ++d) {
                ASSERT_EQ(out[t * dim + d], mine ? whole[t * dim + d] : 0.0f)
                    << "rank " << rank << " token " << t;
                ASSERT_EQ(out_packed[t * dim + d], out[t * dim + d]);
            }
        }
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += out[i], sum_packed[i] += out_packed[i];
    }
    EXPECT_EQ(sum, whole);
    EXPECT_EQ(sum_packed, whole);
}

}  // namespace
}  // namespace lmrun::kernels
