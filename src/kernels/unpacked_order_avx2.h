// Internal to the AVX2 decode tiles that keep rows in the lane order of vpunpck{l,h}wd
// (attention_decode_bf16_avx2.cpp, attention_decode_int8_avx2.cpp): the unpack works within
// 128-bit lanes, so 16 elements come out as two vectors holding elements 0-3 and 8-11, then 4-7
// and 12-15. A tile stores q in that order (the dot products do not care) and sums P·V in it,
// and puts its outputs back in head order once at the end. (Anonymous namespace: AVX2 units only.)
#pragma once

#include <cstdint>

namespace lmrun::kernels {
namespace {

// Where element d of a row sits in unpacked order ([lo | hi] per 16 elements).
inline int64_t unpacked_position(int64_t d) {
    const int64_t i = d % 16;
    return d - i + (i % 8) / 4 * 8 + i / 8 * 4 + i % 4;
}

// Puts each of `count` rows of D floats from head order into unpacked order (to_unpacked) or
// back; row_copy holds D floats.
template <int64_t D>
void reorder_rows(float* rows, int64_t count, bool to_unpacked, float* row_copy) {
    for (int64_t r = 0; r < count; ++r) {
        float* row = rows + r * D;
        for (int64_t d = 0; d < D; ++d) row_copy[d] = row[d];
        for (int64_t d = 0; d < D; ++d) {
            if (to_unpacked) {
                row[unpacked_position(d)] = row_copy[d];
            } else {
                row[d] = row_copy[unpacked_position(d)];
            }
        }
    }
}

}  // namespace
}  // namespace lmrun::kernels
