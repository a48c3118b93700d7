#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace lmrun {

TEST(DType, Bf16RoundsToNearestEven) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to even (1.0).
    EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
    EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16RoundTripsRandomValues) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-60000.f, 60000.f);
    for (int i = 0; i < 10000; ++i) {
        float value = dist(rng);
        float back = f16_to_f32(f32_to_f16(value));
        EXPECT_NEAR(back, value, std::fabs(value) * 1e-3f + 1e-3f);
    }
    EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(f32_to_f16(65504.f), 0x7bff);
}

TEST(DType, ParsesSafetensorsAndTorchNames) {
    EXPECT_EQ(parse_dtype("BF16"), DType::BF16);
    EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
    EXPECT_EQ(parse_dtype("float32"), DType::F32);
    EXPECT_FALSE(parse_dtype("F8_E4M3").has_value());
}

}  // namespace lmrun
