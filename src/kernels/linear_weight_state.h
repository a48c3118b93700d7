// Internal to the linear kernels: what a LinearWeight holds (the packed buffer it owns and its
// cached oneDNN primitives), shared by linear.cpp and the builder that fills it.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kernels/linear_gemv.h"
#include "kernels/linear_onednn.h"

namespace lmrun::kernels {

struct LinearWeightState {
    PackedLinear packed;
    size_t nbytes = 0;
    std::unique_ptr<void, decltype(&std::free)> buffer{nullptr, &std::free};
    std::shared_ptr<const void> borrowed;  // keeps alive memory the packed data lives in instead
                                           // (a mapped packed-weight cache file)
    std::vector<float> scales;             // int8 only
    std::vector<int32_t> compensation;     // int8 only
    OnednnLinear onednn;
};

}  // namespace lmrun::kernels
