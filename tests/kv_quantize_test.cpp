// KV row quantization: the AVX2 path makes the same bytes and scale as its scalar twin (odd
// lengths, zero rows, outliers), fp8's scale search never does worse than the plain max/448
// scale, and the stored rows decode within the format's precision.
#include "kernels/kv_quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace lmrun::kernels {
namespace {

float decoded(DType dtype, uint8_t byte, float scale) {
    return (dtype == DType::I8 ? float(int8_t(byte)) : fp8_e4m3_to_f32(byte)) * scale;
}

TEST(KvQuantize, MatchesScalarTwinAndDecodesWithinPrecision) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (DType dtype : {DType::I8, DType::F8E4M3}) {
        for (int64_t dim : {1, 3, 8, 13, 64, 128, 130, 256}) {
            for (int trial = 0; trial < 20; ++trial) {
                std::vector<float> row(static_cast<size_t>(dim));
                for (float& x : row) x = normal(rng) * (trial % 3 == 0 ? 1e-3f : 3.0f);
                if (trial == 5) std::fill(row.begin(), row.end(), 0.0f);
                if (trial == 6) row[size_t(dim / 2)] = 500.0f;  // one outlier
                std::vector<uint8_t> got(row.size()), want(row.size());
                float got_scale = -1, want_scale = -2;
                quantize_kv_row(row.data(), dim, dtype, got.data(), &got_scale);
                quantize_kv_row_reference(row.data(), dim, dtype, want.data(), &want_scale);
                ASSERT_EQ(got_scale, want_scale) << dtype_name(dtype) << " dim " << dim << " trial " << trial;
                ASSERT_EQ(got, want) << dtype_name(dtype) << " dim " << dim << " trial " << trial;
                float amax = 0;
                for (float x : row) amax = std::max(amax, std::fabs(x));
                for (int64_t d = 0; d < dim; ++d) {
                    const float back = decoded(dtype, got[d], got_scale);
                    const float tolerance =
                        dtype == DType::I8 ? amax / 127 / 2
                                           : std::max(std::fabs(row[d]) / 16, std::ldexp(got_scale, -10));
                    ASSERT_NEAR(back, row[d], tolerance * 1.001f + 1e-30f) << d;
                }
                if (trial == 5) {
                    EXPECT_EQ(got_scale, 0.0f);
                }
            }
        }
    }
}

TEST(KvQuantize, Fp8ScaleSearchBeatsThePlainScale) {
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    double searched_total = 0, plain_total = 0;
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<float> row(8);
        for (float& x : row) x = dist(rng);
        std::vector<uint8_t> bytes(row.size());
        float scale = 0;
        quantize_kv_row(row.data(), 8, DType::F8E4M3, bytes.data(), &scale);
        float amax = 0;
        for (float x : row) amax = std::max(amax, std::fabs(x));
        const float plain_scale = amax / kFp8E4M3Max;
        double searched = 0, plain = 0;
        for (size_t d = 0; d < row.size(); ++d) {
            searched += std::pow(decoded(DType::F8E4M3, bytes[d], scale) - row[d], 2);
            plain +=
                std::pow(fp8_e4m3_to_f32(f32_to_fp8_e4m3(row[d] / plain_scale)) * plain_scale - row[d], 2);
        }
        ASSERT_LE(searched, plain * (1 + 1e-5) + 1e-12) << trial;
        searched_total += searched;
        plain_total += plain;
    }
    EXPECT_LT(searched_total, 0.8 * plain_total);  // a real gain on average, not just no loss
}

}  // namespace
}  // namespace lmrun::kernels
