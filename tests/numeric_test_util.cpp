#include "numeric_test_util.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

namespace lmrun::testing {

std::vector<float> random_vector(size_t count, std::mt19937& rng, float range) {
    std::uniform_real_distribution<float> dist(-range, range);
    std::vector<float> values(count);
    for (float& v : values) v = dist(rng);
    return values;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
}

double correlation(std::span<const float> a, std::span<const float> b) {
    EXPECT_EQ(a.size(), b.size());
    const size_t n = std::min(a.size(), b.size());
    double mean_a = 0, mean_b = 0;
    for (size_t i = 0; i < n; ++i) mean_a += a[i], mean_b += b[i];
    mean_a /= double(n);
    mean_b /= double(n);
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; ++i) {
        ab += (a[i] - mean_a) * (b[i] - mean_b);
        aa += (a[i] - mean_a) * (a[i] - mean_a);
        bb += (b[i] - mean_b) * (b[i] - mean_b);
    }
    return ab / std::sqrt(aa * bb);
}

}  // namespace lmrun::testing
