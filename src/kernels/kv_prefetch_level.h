// Which cache level decode attention prefetches the next chunk of KV into.
//
// A decode tile walks a key chunk one KV head at a time, and one head's rows lie a whole token row
// apart, which the hardware prefetchers do not follow; so the tiles prefetch the next chunk in
// software while they compute this one (attention_tile.h). Into L1 or into L2 depends on the core:
//  - Zen 4 (32 KiB L1D; 2-core VM, kernel_bench from DRAM, 3 alternating rounds): into L1 the
//    prefetch gained nothing over none at all (one thread: 7-8.6 GB/s of KV either way); into L2
//    it read 1.5-2x faster, for the BF16 tile (batch 64 at 128 tokens of context 1.9-2.6 → 1.2-1.7
//    ms, batch 8 at 4096 tokens 7.1-9.5 → 4.2-7.9 ms), the int8 VNNI tile and the AVX2 tile alike.
//    A chunk's K and V for all heads (64 KiB at Qwen3-0.6B's shape) and the next one's do not
//    fit a 32 KiB L1: lines prefetched there are evicted before the tile reaches them.
//  - Zen 5 and Sapphire Rapids (48 KiB L1D): into L1 measured better than into L2 (README).
//    Rechecked on Zen 5 with lmrun bench (3 alternating rounds, medians L1 vs L2): L2 gained
//    nothing consistent. BF16 batch 8 at 4096 tokens 83 vs 74 tok/s (rounds spread 58-87),
//    batch 32 546 vs 553; int8 weights + KV 122 vs 113 and 884 vs 850.
// So cores whose L1D is smaller than 48 KiB prefetch into L2, the others into L1.
// LMRUN_KV_PREFETCH=l1|l2 overrides the choice (to measure both on one machine).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lmrun::kernels {

enum class KvPrefetchLevel { L1, L2 };

// The rule above for a core with an L1 data cache of `l1d_bytes` (0: unknown, keeps L1).
KvPrefetchLevel kv_prefetch_level_for_l1d(int64_t l1d_bytes);
// "l1" or "l2" (LMRUN_KV_PREFETCH's values); anything else: none.
std::optional<KvPrefetchLevel> parse_kv_prefetch_level(std::string_view name);
// This process's level: LMRUN_KV_PREFETCH if set to a valid value, else the rule for this CPU.
KvPrefetchLevel kv_prefetch_level();

}  // namespace lmrun::kernels
