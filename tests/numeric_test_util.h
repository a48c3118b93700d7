// Numeric helpers shared by the kernel, model and executor tests: random inputs and
// distances between two float vectors.
#pragma once

#include <cstddef>
#include <random>
#include <span>
#include <vector>

namespace lmrun::testing {

// `count` floats drawn uniformly from [-range, range) by `rng`.
std::vector<float> random_vector(size_t count, std::mt19937& rng, float range = 1.0f);

// The largest |a[i] - b[i]|; a test failure (not a crash) when the sizes differ.
float max_abs_diff(std::span<const float> a, std::span<const float> b);

// Pearson correlation of two vectors of the same size.
double correlation(std::span<const float> a, std::span<const float> b);

}  // namespace lmrun::testing
