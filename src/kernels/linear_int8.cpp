#include "kernels/linear_int8.h"

#include <cmath>

namespace lmrun::kernels {

float row_abs_max(const float* values, int64_t count) {
    float amax = 0.0f;
    for (int64_t k = 0; k < count; ++k) amax = std::fabs(values[k]) > amax ? std::fabs(values[k]) : amax;
    return amax;
}

float quantize_row_int8_reference(const float* values, int64_t count, int8_t* q) {
    const float amax = row_abs_max(values, count);
    const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int64_t k = 0; k < count; ++k) {
        float rounded = std::nearbyint(values[k] * inverse);  // ties to even
        q[k] = int8_t(rounded > 127.0f ? 127.0f : rounded < -127.0f ? -127.0f : rounded);
    }
    return amax / 127.0f;
}

}  // namespace lmrun::kernels
