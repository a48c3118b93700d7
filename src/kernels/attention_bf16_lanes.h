// Internal to the AVX512_BF16 attention tiles: where their P·V outputs land. P·V interleaves
// the values of a key pair with vpunpck{l,h}wd, which works within 128-bit lanes, so the
// accumulators of each 32 dims hold them in a fixed permuted order; it is undone once per row
// when the tile writes its output. (Anonymous namespace: included by AVX-512 units only.)
#pragma once

#include <cstdint>

namespace lmrun::kernels {
namespace {

// Lane `lane` of accumulator 2c (high = false) or 2c + 1 (high = true) holds this dimension.
inline int64_t bf16_pv_dim(int64_t c, int64_t lane, bool high) {
    return 32 * c + 8 * (lane / 4) + (high ? 4 : 0) + lane % 4;
}

// dst[d] = factor * o[accumulator lane of d], for one row of head_dim values.
inline void store_bf16_pv_row(const float* o, int64_t head_dim, float factor, float* dst) {
    for (int64_t c = 0; c < head_dim / 32; ++c)
        for (int64_t lane = 0; lane < 16; ++lane) {
            dst[bf16_pv_dim(c, lane, false)] = o[32 * c + lane] * factor;
            dst[bf16_pv_dim(c, lane, true)] = o[32 * c + 16 + lane] * factor;
        }
}

}  // namespace
}  // namespace lmrun::kernels
