// Order statistics of a benchmark's repeated measurements: medians and percentiles, as every
// bench table reports them (the element at that rank, no interpolation).
#pragma once

#include <algorithm>
#include <vector>

namespace lmrun::cli {

// The element at rank floor(fraction · n) of the sorted values (the largest for fraction 1); 0 when
// there are none.
inline double percentile(std::vector<double> values, double fraction) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    return values[std::min(values.size() - 1, size_t(fraction * double(values.size())))];
}

// The upper median for an even count.
inline double median(std::vector<double> values) {
    return percentile(std::move(values), 0.5);
}

}  // namespace lmrun::cli
