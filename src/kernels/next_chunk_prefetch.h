// Internal: the prefetch of a weight stream's next chunk, shared by the AVX2 GEMV (BF16 pairs)
// and the int8 kernels (k-quads). Both packed layouts store a step (one k-pair or k-quad of a
// 64-output tile) as 256 bytes, 4 cache lines, and a chunk as its steps one after another.
//
// The calls (or passes) over a chunk prefetch the next chunk into L2 so that DRAM reads overlap
// the arithmetic instead of stalling the first call on each chunk. Spread over the calls, not all
// in the first: issued at once they fill the line-fill buffers and stall that call's own loads
// (kernel_bench, AVX2 BF16 GEMV, 2 rows in four passes: 17-19 GB/s spread, 15-16 all in the
// first pass, 11-13 with no prefetch). Each call takes a contiguous run of the chunk's lines and
// issues them evenly over its steps; it used to take some lines of every step (line 0 of each
// 256-byte step in one pass, line 1 in another, ...), a strided pattern, and only the first row
// block's calls prefetched. Zen 3, 2 threads, BF16 weights from DRAM (qkv shape), 7 alternating
// rounds per run, 3 runs: 2 rows 1.23-1.30x the GFLOP/s, 4 rows 1.35-1.88x, 8 rows 1.42-1.59x,
// 16 rows 1.16-1.22x, 32 rows 1.07x; 1 row (one call, every line of each step) unchanged.
#pragma once

#include <cstdint>

#include "kernels/linear_gemv.h"

namespace lmrun::kernels {
namespace {

struct NextChunkPrefetch {
    static constexpr int64_t kStepBytes = kTileOutputs * 4;
    static constexpr int64_t kStepLines = kStepBytes / 64;

    const char* next = nullptr;  // null: this call prefetches nothing
    int64_t line0 = 0;           // this share: lines [line0, line0 + lines) of the next chunk
    int64_t lines = 0;
    int64_t steps = 0;            // the steps a call walks, over which the share is spread
    uint64_t lines_per_step = 0;  // 32.32 fixed point, rounded up (step() clamps to `lines`)

    // Every line of the chunk at `next` (null: none), which has `steps` steps, as is the current one.
    static NextChunkPrefetch whole(const void* next, int64_t steps) {
        return share(static_cast<const char*>(next), 0, steps * kStepLines, steps);
    }
    // The part of this prefetch that the index'th of `parts` calls (or passes) over the chunk issues.
    NextChunkPrefetch pass(int64_t index, int64_t parts) const {
        if (next == nullptr) return {};
        const int64_t begin = lines * index / parts, end = lines * (index + 1) / parts;
        return share(next, line0 + begin, end - begin, steps);
    }
    // Steps a kernel issues together (step_range) where its share is sparse(): working out every
    // step's usually empty share cost the AVX2 GEMV and int8 kernels 1.05-1.2x from 8 rows up.
    static constexpr int64_t kSparseStepGroup = 4;
    // Under one line per step of the call, or nothing to issue.
    bool sparse() const { return next == nullptr || lines < steps; }
    // Issues this share's lines due at step p of the call.
    void step(int64_t p) const { step_range(p, p + 1); }
    // Issues this share's lines due at steps [p, p_end) of the call.
    void step_range(int64_t p, int64_t p_end) const {
        if (next == nullptr) return;
        const int64_t first = int64_t((uint64_t(p) * lines_per_step) >> 32);
        const int64_t last = min(int64_t((uint64_t(p_end) * lines_per_step) >> 32), lines);
        for (int64_t i = first; i < last; ++i) __builtin_prefetch(next + 64 * (line0 + i), 0, 2);  // T1
    }

  private:
    static int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
    static NextChunkPrefetch share(const char* next, int64_t line0, int64_t lines, int64_t steps) {
        if (next == nullptr || lines <= 0 || steps <= 0) return {};
        const uint64_t rate = ((uint64_t(lines) << 32) + uint64_t(steps) - 1) / uint64_t(steps);
        return {next, line0, lines, steps, rate};
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
