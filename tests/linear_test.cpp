#include "kernels/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "kernels/linear_gemv.h"
#include "numeric_test_util.h"

namespace lmrun::kernels {
namespace {

struct LinearProblem {
    int64_t rows, out, in;
    DType storage;
};

using testing::random_vector;

// Σ_k |x_k · w_k| per output: the scale of rounding errors of a dot product.
std::vector<double> abs_dot_per_output(const std::vector<float>& x, const std::vector<float>& w, int64_t rows,
                                       int64_t out, int64_t in) {
    std::vector<double> scale(size_t(rows * out));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t n = 0; n < out; ++n) {
            double sum = 0;
            for (int64_t k = 0; k < in; ++k) sum += std::fabs(double(x[r * in + k]) * w[n * in + k]);
            scale[r * out + n] = sum;
        }
    return scale;
}

void expect_within_dot_error(const std::vector<float>& got, const std::vector<float>& want,
                             const std::vector<double>& scale, double rel, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], rel * (scale[i] + 1.0)) << what << " at " << i;
    }
}

using GemvFn = void (*)(const float*, int64_t, const PackedLinear&, const float*, float*);

std::vector<std::pair<const char*, GemvFn>> gemv_paths() {
    std::vector<std::pair<const char*, GemvFn>> paths = {{"avx2", linear_gemv_avx2}};
    if (cpu_features().avx512f && cpu_features().avx512bw) paths.push_back({"avx512", linear_gemv_avx512});
    return paths;
}

class LinearConformance : public ::testing::TestWithParam<LinearProblem> {};

TEST_P(LinearConformance, EveryPathMatchesReference) {
    LinearProblem p = GetParam();
    std::mt19937 rng(unsigned(p.rows * 7919 + p.out * 31 + p.in));
    std::vector<float> w_f32 = random_vector(size_t(p.out * p.in), rng);
    // Weights exactly representable in the storage type, so the reference sees the same values.
    if (p.storage == DType::BF16)
        for (float& v : w_f32) v = bf16_to_f32(f32_to_bf16(v));
    std::vector<float> x = random_vector(size_t(p.rows * p.in), rng);
    std::vector<float> bias = random_vector(size_t(p.out), rng);
    LinearWeight weight = LinearWeight::pack(w_f32.data(), DType::F32, p.out, p.in, p.storage);
    EXPECT_EQ(weight.out_features(), p.out);
    EXPECT_EQ(weight.in_features(), p.in);
    EXPECT_GE(weight.nbytes(), size_t(p.out * p.in) * dtype_size_bytes(p.storage));

    size_t y_count = size_t(p.rows * p.out);
    std::vector<float> want(y_count), got(y_count);
    linear_reference(x.data(), p.rows, weight, bias.data(), want.data());
    std::vector<double> scale = abs_dot_per_output(x, w_f32, p.rows, p.out, p.in);

    // GEMV paths keep F32 activations: F32-accumulation accuracy for both storage types.
    for (auto [name, fn] : gemv_paths()) {
        std::fill(got.begin(), got.end(), NAN);
        fn(x.data(), p.rows, weight.packed(), bias.data(), got.data());
        expect_within_dot_error(got, want, scale, 1e-5, name);
    }

    // The AVX2 GEMM keeps x in F32: the GEMV's accuracy, whatever the row count.
    for (const float* b : {static_cast<const float*>(bias.data()), static_cast<const float*>(nullptr)}) {
        std::vector<float> want_here(y_count);
        linear_reference(x.data(), p.rows, weight, b, want_here.data());
        std::fill(got.begin(), got.end(), NAN);
        linear_gemm_avx2(x.data(), p.rows, weight.packed(), b, got.data());
        expect_within_dot_error(got, want_here, scale, 1e-5, "gemm_avx2");
    }

    // The AVX512_BF16 GEMM rounds x to BF16 and sums in F32: it must match the reference on the
    // rounded x within F32 accumulation error, whatever the row count.
    std::vector<float> x_bf16 = x;
    for (float& v : x_bf16) v = bf16_to_f32(f32_to_bf16(v));
    if (p.storage == DType::BF16 && cpu_features().avx512_bf16) {
        std::vector<float> want_bf16(y_count);
        linear_reference(x_bf16.data(), p.rows, weight, bias.data(), want_bf16.data());
        std::fill(got.begin(), got.end(), NAN);
        linear_gemm_bf16_avx512(x.data(), p.rows, weight.packed(), bias.data(), got.data());
        expect_within_dot_error(got, want_bf16, scale, 1e-5, "gemm_bf16_avx512");
    }
    // The AMX-BF16 GEMM: the same rounding of x, F32 sums in the tiles.
    if (p.storage == DType::BF16 && kernel_isa() == Isa::AmxBf16) {
        std::vector<float> want_bf16(y_count);
        linear_reference(x_bf16.data(), p.rows, weight, bias.data(), want_bf16.data());
        for (const float* b : {static_cast<const float*>(bias.data()), static_cast<const float*>(nullptr)}) {
            if (!b) linear_reference(x_bf16.data(), p.rows, weight, nullptr, want_bf16.data());
            std::fill(got.begin(), got.end(), NAN);
            linear_gemm_bf16_amx(x.data(), p.rows, weight.packed(), b, got.data());
            expect_within_dot_error(got, want_bf16, scale, 1e-5, "gemm_bf16_amx");
        }
    }

    // The dispatched path. oneDNN (pieces of more than kGemvMaxRows rows) rounds x to BF16 when
    // the weights are BF16, the GEMV (small remainders) does not: each row must match the
    // reference on BF16-rounded x or on F32 x within F32 accumulation error (1e-5 of Σ|x·w|),
    // and in any case be within BF16 rounding of x (2^-8 of Σ|x·w|) of the F32-x reference.
    std::vector<float> x_rounded = x;
    for (float& v : x_rounded) v = bf16_to_f32(f32_to_bf16(v));
    for (const float* b : {static_cast<const float*>(bias.data()), static_cast<const float*>(nullptr)}) {
        std::fill(got.begin(), got.end(), NAN);
        linear(x.data(), p.rows, weight, b, got.data());
        std::vector<float> want_f32(y_count), want_rounded(y_count);
        linear_reference(x.data(), p.rows, weight, b, want_f32.data());
        linear_reference(x_rounded.data(), p.rows, weight, b, want_rounded.data());
        bool may_round = p.storage == DType::BF16 && p.rows > kGemvMaxRows;
        for (int64_t r = 0; r < p.rows; ++r) {
            int matches_f32 = 0, matches_rounded = 0;
            for (int64_t n = 0; n < p.out; ++n) {
                size_t i = size_t(r * p.out + n);
                double tolerance = 1e-5 * (scale[i] + 1.0);
                matches_f32 += std::fabs(got[i] - want_f32[i]) <= tolerance;
                matches_rounded += std::fabs(got[i] - want_rounded[i]) <= tolerance;
                ASSERT_NEAR(got[i], want_f32[i], std::ldexp(1.0, -8) * (scale[i] + 1.0)) << "row " << r;
            }
            bool ok = matches_f32 == p.out || (may_round && matches_rounded == p.out);
            EXPECT_TRUE(ok) << "row " << r << ": " << matches_f32 << " / " << matches_rounded << " of "
                            << p.out;
        }
    }
}

std::vector<LinearProblem> linear_problems() {
    std::vector<LinearProblem> list;
    for (DType storage : {DType::F32, DType::BF16}) {
        for (int64_t rows : {1, 2, 3, 4, 5, 8, 9, 17}) {
            list.push_back({rows, 17, 3, storage});
            list.push_back({rows, 127, 1000, storage});
        }
        list.push_back({1, 1, 1, storage});
        list.push_back({1, 130, 70, storage});  // one row: an odd pair count (a stream's tail), partial tile
        list.push_back({3, 1000, 127, storage});
        list.push_back({33, 300, 257, storage});
        list.push_back({13, 70, 64, storage});    // 8 rows on oneDNN + 5
        list.push_back({300, 65, 40, storage});   // 256 + 32 + 8 + 4 (GEMV remainder)
        list.push_back({1100, 16, 24, storage});  // more than one 512-row piece
        list.push_back({2, 64, 4099, storage});
        list.push_back({64, 200, 96, storage});    // two 32-row AMX blocks
        list.push_back({40, 130, 1024, storage});  // a 32-row block and a partial one
        list.push_back({700, 70, 1100, storage});  // several x panels per pass over the weights
    }
    return list;
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearConformance, ::testing::ValuesIn(linear_problems()),
                         [](const ::testing::TestParamInfo<LinearProblem>& info) {
                             const LinearProblem& p = info.param;
                             return std::string(dtype_name(p.storage)) + "_r" + std::to_string(p.rows) +
                                    "_o" + std::to_string(p.out) + "_i" + std::to_string(p.in);
                         });

TEST(Linear, PacksBf16AndF16Sources) {
    std::mt19937 rng(3);
    int64_t out = 70, in = 33;
    std::vector<float> w = random_vector(size_t(out * in), rng);
    std::vector<uint16_t> w_bf16(w.size()), w_f16(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
        w_bf16[i] = f32_to_bf16(w[i]);
        w_f16[i] = f32_to_f16(w[i]);
    }
    LinearWeight from_bf16 = LinearWeight::pack(w_bf16.data(), DType::BF16, out, in, DType::F32);
    LinearWeight from_f16 = LinearWeight::pack(w_f16.data(), DType::F16, out, in, DType::BF16);
    const auto* f32_data = static_cast<const float*>(from_bf16.packed().data);
    const auto* bf16_data = static_cast<const uint16_t*>(from_f16.packed().data);
    for (int64_t n = 0; n < out; ++n)
        for (int64_t k = 0; k < in; ++k) {
            ASSERT_EQ(f32_data[packed_offset(from_bf16.packed(), n, k)], bf16_to_f32(w_bf16[n * in + k]));
            ASSERT_EQ(bf16_data[packed_offset(from_f16.packed(), n, k)],
                      f32_to_bf16(f16_to_f32(w_f16[n * in + k])));
        }
}

// Packing writes every element itself (no memset first): values where the source has them,
// zero in the padded k and in the lanes past out_features of the last tile.
TEST(Linear, PacksSameDtypeSourcesExactlyWithZeroPadding) {
    std::mt19937 rng(4);
    const int64_t out = 70, in = 45;
    std::vector<float> w = random_vector(size_t(out * in), rng);
    std::vector<uint16_t> w_bf16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w_bf16[i] = f32_to_bf16(w[i]);
    LinearWeight bf16 = LinearWeight::pack(w_bf16.data(), DType::BF16, out, in, DType::BF16);
    LinearWeight f32 = LinearWeight::pack(w.data(), DType::F32, out, in, DType::F32);
    for (const LinearWeight* weight : {&bf16, &f32}) {
        const PackedLinear& p = weight->packed();
        ASSERT_GT(p.padded_in, in);
        for (int64_t n = 0; n < p.num_tiles * kTileOutputs; ++n)
            for (int64_t k = 0; k < p.padded_in; ++k) {
                const int64_t offset = packed_offset(p, n, k);
                const bool inside = n < out && k < in;
                if (p.dtype == DType::BF16) {
                    ASSERT_EQ(static_cast<const uint16_t*>(p.data)[offset], inside ? w_bf16[n * in + k] : 0)
                        << n << "," << k;
                } else {
                    ASSERT_EQ(static_cast<const float*>(p.data)[offset], inside ? w[n * in + k] : 0.0f)
                        << n << "," << k;
                }
            }
    }
}

TEST(Linear, RepeatedCallsGiveIdenticalResults) {
    std::mt19937 rng(5);
    int64_t out = 200, in = 96;
    std::vector<float> w = random_vector(size_t(out * in), rng);
    LinearWeight weight = LinearWeight::pack(w.data(), DType::F32, out, in, DType::BF16);
    for (int64_t rows : {1, 6, 40}) {
        std::vector<float> x = random_vector(size_t(rows * in), rng);
        std::vector<float> first(size_t(rows * out)), second(size_t(rows * out));
        linear(x.data(), rows, weight, nullptr, first.data());
        linear(x.data(), rows, weight, nullptr, second.data());
        EXPECT_EQ(first, second) << rows;
    }
}

}  // namespace
}  // namespace lmrun::kernels
