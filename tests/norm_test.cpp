#include "kernels/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "numeric_test_util.h"

namespace lmrun::kernels {
namespace {

using testing::random_vector;

void expect_relatively_close(const std::vector<float>& got, const std::vector<float>& want,
                             const char* what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i]) + 1e-6) << what << " at " << i;
}

using RowsFn = void (*)(float*, float*, const float*, float, int64_t, int64_t, float*, bool);

std::vector<std::pair<const char*, RowsFn>> isa_paths() {
    std::vector<std::pair<const char*, RowsFn>> paths = {{"avx2", rms_norm_rows_avx2}};
    if (kernel_isa() >= Isa::Avx512) paths.push_back({"avx512", rms_norm_rows_avx512});
    return paths;
}

TEST(RmsNorm, EveryPathMatchesReference) {
    std::mt19937 rng(1);
    for (int64_t rows : {1, 3, 40}) {
        for (int64_t dim : {1, 3, 17, 127, 1000, 1024}) {
            std::vector<float> x = random_vector(size_t(rows * dim), rng, 3.0f);
            std::vector<float> w = random_vector(size_t(dim), rng);
            std::vector<float> want(x.size()), got(x.size());
            rms_norm_reference(x.data(), w.data(), 1e-6f, rows, dim, want.data());
            for (auto [name, fn] : isa_paths()) {
                fn(x.data(), nullptr, w.data(), 1e-6f, rows, dim, got.data(), false);
                expect_relatively_close(got, want, name);
            }
            rms_norm(x.data(), w.data(), 1e-6f, rows, dim, got.data());
            expect_relatively_close(got, want, "dispatched");
            std::vector<float> in_place = x;  // y may alias x
            rms_norm(in_place.data(), w.data(), 1e-6f, rows, dim, in_place.data());
            expect_relatively_close(in_place, want, "in place");
        }
    }
}

TEST(RmsNorm, EpsilonMattersForTinyInputs) {
    std::vector<float> x = {1e-4f, -1e-4f};
    std::vector<float> w = {1.0f, 1.0f};
    std::vector<float> y(2);
    rms_norm(x.data(), w.data(), 1e-6f, 1, 2, y.data());
    // 1e-4 / sqrt(1e-8 + 1e-6)
    EXPECT_NEAR(y[0], 1e-4 / std::sqrt(1.01e-6), 1e-6);
    EXPECT_NEAR(y[1], -1e-4 / std::sqrt(1.01e-6), 1e-6);
}

TEST(AddRmsNorm, EveryPathMatchesReference) {
    std::mt19937 rng(2);
    for (int64_t rows : {1, 5, 64}) {
        for (int64_t dim : {3, 17, 1024, 1000}) {
            std::vector<float> x = random_vector(size_t(rows * dim), rng);
            std::vector<float> residual = random_vector(x.size(), rng, 4.0f);
            std::vector<float> w = random_vector(size_t(dim), rng);
            std::vector<float> want_x = x, want_res = residual;
            add_rms_norm_reference(want_x.data(), want_res.data(), w.data(), 1e-5f, rows, dim);
            for (auto [name, fn] : isa_paths()) {
                std::vector<float> got_x = x, got_res = residual;
                fn(got_x.data(), got_res.data(), w.data(), 1e-5f, rows, dim, got_x.data(), true);
                expect_relatively_close(got_res, want_res, name);
                expect_relatively_close(got_x, want_x, name);
            }
            std::vector<float> got_x = x, got_res = residual;
            add_rms_norm(got_x.data(), got_res.data(), w.data(), 1e-5f, rows, dim);
            expect_relatively_close(got_res, want_res, "dispatched residual");
            expect_relatively_close(got_x, want_x, "dispatched");
        }
    }
}

TEST(RmsNormHeads, NormalisesEachHeadInsideAStridedBuffer) {
    std::mt19937 rng(8);
    for (int64_t num_tokens : {1, 3, 300}) {
        int64_t num_heads = 4, head_dim = 128, token_stride = num_heads * head_dim + 2 * 2 * head_dim + 3;
        std::vector<float> x = random_vector(size_t(num_tokens * token_stride), rng, 2.0f);
        std::vector<float> w = random_vector(size_t(head_dim), rng);
        std::vector<float> got = x;
        rms_norm_heads(got.data(), num_tokens, num_heads, head_dim, token_stride, w.data(), 1e-6f);
        for (int64_t t = 0; t < num_tokens; ++t) {
            const float* row = x.data() + t * token_stride;
            std::vector<float> want(size_t(num_heads * head_dim));
            rms_norm_reference(row, w.data(), 1e-6f, num_heads, head_dim, want.data());
            std::vector<float> heads(got.begin() + t * token_stride,
                                     got.begin() + t * token_stride + num_heads * head_dim);
            expect_relatively_close(heads, want, "heads");
            for (int64_t e = num_heads * head_dim; e < token_stride; ++e)
                ASSERT_EQ(got[t * token_stride + e], row[e]) << "outside the heads";
        }
    }
}

}  // namespace
}  // namespace lmrun::kernels
