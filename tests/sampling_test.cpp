#include "kernels/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace lmrun::kernels {
namespace {

using ArgmaxFn = int32_t (*)(const float*, int64_t);
using SoftmaxFn = void (*)(float*, int64_t, float);

std::vector<std::pair<const char*, ArgmaxFn>> argmax_paths() {
    std::vector<std::pair<const char*, ArgmaxFn>> paths = {{"avx2", argmax_avx2}, {"dispatched", argmax}};
    if (kernel_isa() >= Isa::Avx512) paths.push_back({"avx512", argmax_avx512});
    return paths;
}

TEST(Argmax, EveryPathMatchesReferenceIncludingTies) {
    std::mt19937 rng(4);
    for (int64_t vocab : {1, 3, 17, 127, 1000, 151936}) {
        std::uniform_int_distribution<int> coarse(-20, 20);  // few distinct values: many ties
        std::vector<float> logits(static_cast<size_t>(vocab));
        for (float& v : logits) v = float(coarse(rng)) * 0.5f;
        int32_t want = argmax_reference(logits.data(), vocab);
        ASSERT_EQ(logits[want], *std::max_element(logits.begin(), logits.end()));
        for (int64_t i = 0; i < want; ++i) ASSERT_LT(logits[i], logits[want]);
        for (auto [name, fn] : argmax_paths())
            EXPECT_EQ(fn(logits.data(), vocab), want) << name << " " << vocab;
        // The maximum in the tail (past the last full vector).
        logits[vocab - 1] = 1000.0f;
        for (auto [name, fn] : argmax_paths()) EXPECT_EQ(fn(logits.data(), vocab), vocab - 1) << name;
    }
}

TEST(Argmax, SkipsNanAndHandlesInfinity) {
    std::vector<float> logits(40, -INFINITY);
    logits[3] = NAN;
    logits[21] = -5.0f;
    logits[30] = -5.0f;
    for (auto [name, fn] : argmax_paths()) EXPECT_EQ(fn(logits.data(), 40), 21) << name;
}

TEST(Softmax, EveryPathMatchesReference) {
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 5.0f);
    std::vector<std::pair<const char*, SoftmaxFn>> paths = {{"avx2", softmax_avx2}, {"dispatched", softmax}};
    if (kernel_isa() >= Isa::Avx512) paths.push_back({"avx512", softmax_avx512});
    for (int64_t vocab : {1, 3, 17, 127, 1000, 151936}) {
        for (float temperature : {0.3f, 1.0f, 1.7f}) {
            std::vector<float> logits(static_cast<size_t>(vocab));
            for (float& v : logits) v = dist(rng);
            if (vocab > 5) logits[2] = -INFINITY;  // a masked token gets probability 0
            std::vector<float> want = logits;
            softmax_reference(want.data(), vocab, temperature);
            for (auto [name, fn] : paths) {
                std::vector<float> got = logits;
                fn(got.data(), vocab, temperature);
                double total = 0;
                float max = *std::max_element(logits.begin(), logits.end());
                for (int64_t i = 0; i < vocab; ++i) {
                    // F32 rounding of the exponent (l - max) / T costs ~1 ulp of its magnitude.
                    double exponent = std::fabs((double(logits[i]) - max) / temperature);
                    double rel = std::isinf(exponent) ? 0.0 : 1e-5 + 2.5e-7 * exponent;
                    ASSERT_NEAR(got[i], want[i], rel * want[i] + 1e-12) << name << " at " << i;
                    total += got[i];
                }
                EXPECT_NEAR(total, 1.0, 1e-5) << name;
                if (vocab > 5) {
                    EXPECT_EQ(got[2], 0.0f) << name;
                }
            }
        }
    }
}

}  // namespace
}  // namespace lmrun::kernels
