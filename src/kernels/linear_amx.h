// Internal to the AMX kernels (*_amx.cpp): the one tile configuration they all use, every
// tile 16 rows × 64 bytes (palette 1). A thread loads it before its first tile instruction and
// releases the tiles when done; call only where kernel_isa() is amx.
#pragma once

namespace lmrun::kernels {

void configure_amx_tiles();
void release_amx_tiles();

}  // namespace lmrun::kernels
