#include "kernels/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace lmrun::kernels {
namespace {

TEST(SiluAndMul, EveryPathMatchesReference) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-12.0f, 12.0f);
    using Fn = void (*)(const float*, int64_t, int64_t, float*);
    std::vector<std::pair<const char*, Fn>> paths = {{"avx2", silu_and_mul_rows_avx2},
                                                     {"dispatched", silu_and_mul}};
    if (kernel_isa() >= Isa::Avx512) paths.push_back({"avx512", silu_and_mul_rows_avx512});
    for (int64_t rows : {1, 3, 33}) {
        for (int64_t dim : {1, 3, 17, 127, 1000, 3072}) {
            std::vector<float> gate_up(size_t(rows * 2 * dim));
            for (float& v : gate_up) v = dist(rng);
            std::vector<float> want(size_t(rows * dim)), got(want.size());
            silu_and_mul_reference(gate_up.data(), rows, dim, want.data());
            for (auto [name, fn] : paths) {
                fn(gate_up.data(), rows, dim, got.data());
                for (size_t i = 0; i < want.size(); ++i)
                    ASSERT_NEAR(got[i], want[i], 2e-6 * std::fabs(want[i]) + 1e-7) << name << " at " << i;
            }
        }
    }
}

TEST(SiluAndMul, KnownValues) {
    // silu(0) = 0, silu(1) = 1 / (1 + e^-1), silu(-100) ≈ -0 (no NaN from e^100).
    std::vector<float> gate_up = {0.0f, 1.0f, -100.0f, 100.0f, 5.0f, 2.0f, 3.0f, 0.5f};
    std::vector<float> out(4);
    silu_and_mul(gate_up.data(), 1, 4, out.data());
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_NEAR(out[1], 2.0 / (1.0 + std::exp(-1.0)), 1e-6);
    EXPECT_NEAR(out[2], 0.0f, 1e-30);
    EXPECT_NEAR(out[3], 50.0f, 1e-4);
}

}  // namespace
}  // namespace lmrun::kernels
