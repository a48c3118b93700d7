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
    EXPECT_EQ(parse_dtype("F8_E4M3"), DType::F8E4M3);
    EXPECT_EQ(parse_dtype("I8"), DType::I8);
    EXPECT_FALSE(parse_dtype("F8_E5M2").has_value());
}

// Every fp8 e4m3fn code decodes to its value and encodes back to itself (NaN to NaN).
TEST(DType, Fp8E4M3RoundTripsEveryCode) {
    for (int code = 0; code < 256; ++code) {
        float value = fp8_e4m3_to_f32(uint8_t(code));
        if ((code & 0x7f) == 0x7f) {
            EXPECT_TRUE(std::isnan(value));
            continue;
        }
        EXPECT_EQ(f32_to_fp8_e4m3(value), code == 0x80 ? 0x80 : code) << code << " " << value;
    }
    EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);
    EXPECT_EQ(fp8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
    EXPECT_EQ(fp8_e4m3_to_f32(0x38), 1.0f);
}

TEST(DType, Fp8E4M3RoundsToNearestEvenAndSaturates) {
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.0625f)), 1.0f);   // halfway 1 / 1.125: even (1)
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.1875f)), 1.25f);  // halfway 1.125 / 1.25: even (1.25)
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.05f)), 1.0f);
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1.07f)), 1.125f);
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1e6f)), 448.0f);
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(-1e6f)), -448.0f);
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(1e-4f)), 0.0f);  // below half the smallest subnormal
    EXPECT_EQ(fp8_e4m3_to_f32(f32_to_fp8_e4m3(0.0019f)), std::ldexp(1.0f, -9));
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-400.f, 400.f);
    for (int i = 0; i < 10000; ++i) {  // relative error at most half a step: 2^-4
        float value = dist(rng);
        float back = fp8_e4m3_to_f32(f32_to_fp8_e4m3(value));
        EXPECT_LE(std::fabs(back - value), std::fabs(value) * 0.0625f + std::ldexp(1.0f, -10)) << value;
    }
}

}  // namespace lmrun
