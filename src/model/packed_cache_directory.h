// The directory of packed weight files (packed_weight_cache.h) as a cache the user did not have
// to ask for: where it is by default (~/.cache/lmrun/packed, as vLLM keeps its compiled graphs
// under ~/.cache/vllm), how much room it may take, and the upkeep that keeps it there. Before a
// file is written, under a lock on the directory shared by every lmrun process: temporary files
// of writers that died go, then files whose model folder is gone, then the least recently used
// ones until the new file fits the bound; a file that would leave the file system nearly full is
// not written at all. Readers take no lock: a file removed while another process maps it stays
// readable through that mapping.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "kernels/linear.h"
#include "model/packed_weight_cache.h"

namespace lmrun {

// A bound a little over the largest model people run on CPUs (an 8B model in BF16 is 16 GiB).
constexpr int64_t kDefaultPackedCacheBytes = int64_t(20) << 30;

struct PackedCacheOptions {
    std::string dir;  // "": no packed cache
    int64_t max_bytes = kDefaultPackedCacheBytes;
};

// $LMRUN_CACHE_DIR/packed, else $XDG_CACHE_HOME/lmrun/packed, else $HOME/.cache/lmrun/packed;
// "" when none of them is set.
std::string default_packed_cache_dir();

// The directory a `--packed-cache` value names: "" is the default directory, "none" no cache.
std::string packed_cache_dir_from_option(const std::string& option);

// Writes `weights` to key.path for options.dir's bound, under the directory's lock, after the
// upkeep described above. True when written; false when a process wrote the same file
// meanwhile, or when the bound or the free space leaves no room (said in one log line).
// `before_each_piece` as in write_packed_cache.
Result<bool> store_packed_cache(const PackedCacheOptions& options, const PackedCacheKey& key,
                                const std::vector<const kernels::LinearWeight*>& weights,
                                const std::function<void()>& before_each_piece = {});

}  // namespace lmrun
