// Internal to the AMX kernels (*_amx.cpp): the one tile configuration they all use, every
// tile 16 rows × 64 bytes (palette 1). A thread loads it before its first tile instruction and
// releases the tiles when done; call only where kernel_isa() is amx. Also the row blocking that
// the BF16 and int8 GEMMs share.
#pragma once

#include <cstdint>

namespace lmrun::kernels {

inline constexpr int64_t kAmxRows = 16;  // rows of an A / C tile

// Passes the AMX GEMMs make over a weight tile for `rows` rows of x: one 16-row block over all 64
// outputs when rows ≤ 16, else two (one per 32-output half) for each block of 32 rows.
inline int64_t amx_passes_per_tile(int64_t rows) {
    return rows <= kAmxRows ? 1 : (rows + 2 * kAmxRows - 1) / (2 * kAmxRows) * 2;
}

void configure_amx_tiles();
void release_amx_tiles();

}  // namespace lmrun::kernels
