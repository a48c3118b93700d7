#include "kernels/embedding.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

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
    embedding_lookup(ids.data(), int64_t(ids.size()), table.data(), DType::F32, dim, out.data());
    embedding_lookup(ids.data(), int64_t(ids.size()), table_bf16.data(), DType::BF16, dim, out_bf16.data());
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
    embedding_lookup(ids.data(), num_tokens, table.data(), DType::F32, dim, out.data());
    for (int64_t t = 0; t < num_tokens; ++t)
        for (int64_t d = 0; d < dim; ++d) ASSERT_EQ(out[t * dim + d], float(ids[t] * dim + d));
}

}  // namespace
}  // namespace lmrun::kernels
