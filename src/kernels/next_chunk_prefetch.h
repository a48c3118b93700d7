// Internal: the prefetch of a weight stream's next chunk, shared by the AVX2 GEMV (BF16 pairs)
// and the int8 kernels (k-quads). Both packed layouts store a step (one k-pair or k-quad of a
// 64-output tile) as 256 bytes, 4 cache lines.
//
// The calls (or passes) over a chunk prefetch the next chunk into L2, each some of the lines of
// every step: DRAM reads then overlap the arithmetic instead of stalling the first call on each
// chunk. Spread over the calls, not all in the first: issued at once they fill the line-fill
// buffers and stall that call's own loads (kernel_bench, AVX2 BF16 GEMV, 2 rows in four passes:
// 17-19 GB/s spread, 15-16 all in the first pass, 11-13 with no prefetch).
#pragma once

#include <cstdint>

#include "kernels/linear_gemv.h"

namespace lmrun::kernels {
namespace {

struct NextChunkPrefetch {
    static constexpr int64_t kStepBytes = kTileOutputs * 4;
    static constexpr int64_t kStepLines = kStepBytes / 64;

    const char* next = nullptr;    // null: this call prefetches nothing
    int64_t line0 = 0, line1 = 0;  // lines [line0, line1) of each step

    // Every line of every step of the chunk at `next` (null: none).
    static NextChunkPrefetch whole(const void* next) {
        return {static_cast<const char*>(next), 0, kStepLines};
    }
    void step(int64_t p) const {
        if (next == nullptr) return;
        const char* step_lines = next + p * kStepBytes;
        for (int64_t i = line0; i < line1; ++i) __builtin_prefetch(step_lines + 64 * i, 0, 2);  // T1
    }
    // The part of this prefetch that the index'th of `passes` passes over the chunk issues.
    NextChunkPrefetch pass(int64_t index, int64_t passes) const {
        const int64_t span = line1 - line0;
        const int64_t begin = line0 + span * index / passes, end = line0 + span * (index + 1) / passes;
        return {end > begin ? next : nullptr, begin, end};
    }
};

// The AMX GEMMs' form: a thread walks whole weight tiles, each in several passes (row blocks,
// output halves) that read it from L2; the next tile is walked into L2 meanwhile, a few lines at
// each step of the current tile's passes, so that DRAM reads overlap the tile instructions
// instead of stalling the first pass on every tile.
class NextTilePrefetch {
  public:
    // next: the next tile's first byte (null: none), `bytes` long; steps: the steps the passes over
    // the current tile take in all.
    NextTilePrefetch(const void* next, int64_t bytes, int64_t steps)
        : cursor_(static_cast<const char*>(next)),
          end_(next ? cursor_ + bytes : nullptr),
          lines_per_step_(steps > 0 ? (bytes / 64 + steps - 1) / steps : 0) {}
    void step() {
        for (int64_t i = 0; i < lines_per_step_ && cursor_ < end_; ++i, cursor_ += 64)
            __builtin_prefetch(cursor_, 0, 2);  // T1: into L2
    }

  private:
    const char* cursor_ = nullptr;
    const char* end_ = nullptr;
    int64_t lines_per_step_ = 0;
};

}  // namespace
}  // namespace lmrun::kernels
