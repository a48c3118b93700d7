// `--packed-cache DIR`: the packed linear weights of a model written once to a file under DIR,
// and on later starts mapped read-only from it instead of allocating fresh memory (which the
// kernel zeroes) and packing the checkpoint again. The file is keyed by an identity text: the
// checkpoint's files (name, size, modification time and a hash of each safetensors header),
// config.json's hash, the model folder, the weight dtype and quantization, the rank, and the packed layout's
// parameters (tile width, k padding per dtype). Each weight's bytes carry a checksum that is
// verified on every read (on all threads; it also faults the mapping in). A file that is
// missing, made for another identity, truncated or corrupt is never used: the caller packs from
// the checkpoint and writes the file again.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "kernels/linear.h"
#include "model/checkpoint.h"
#include "model/quantization_config.h"

namespace lmrun {

// What one cached weight must be: the shape and storage dtype the model packs it as.
struct PackedWeightShape {
    int64_t out_features = 0;
    int64_t in_features = 0;
    DType storage_dtype = DType::BF16;
};

struct PackedCacheKey {
    std::string path;      // DIR/<model folder>-<hash of folder, dtype, quantization, rank>.lmpack
    std::string identity;  // what the file must have been made from (written into it)
};

// The file and identity for this checkpoint loaded with these settings. An error names a
// checkpoint file that cannot be read.
Result<PackedCacheKey> packed_cache_key(const std::string& cache_dir, const Checkpoint& checkpoint,
                                        DType weight_dtype, const WeightQuantization& quantization,
                                        int tp_rank, int tp_size);

// The weights of the file at key.path, in the order of `shapes`, borrowing the file's mapping.
// NotFound when there is no file; Corrupt (the message naming the file and what is wrong) when
// it was made for another identity or other shapes, is truncated, or a checksum fails.
Result<std::vector<kernels::LinearWeight>> read_packed_cache(const PackedCacheKey& key,
                                                             const std::vector<PackedWeightShape>& shapes);

// Writes `weights` (in the order read_packed_cache will expect them) to key.path, through a
// temporary file renamed into place; creates the directory if missing. `before_each_piece`
// (when set) runs before every few MiB written: a writer in the background waits there while
// the engine computes.
Status write_packed_cache(const PackedCacheKey& key, const std::vector<const kernels::LinearWeight*>& weights,
                          const std::function<void()>& before_each_piece = {});

// The identity text of the file at `path` (its header checked, not its weights): what it was
// made from. NotFound or Corrupt as read_packed_cache.
Result<std::string> read_packed_cache_identity(const std::string& path);

// The model folder an identity text names ("" when it names none).
std::string packed_cache_model_folder(const std::string& identity);

// The bytes write_packed_cache will write for `weights`.
uint64_t packed_cache_file_bytes(const PackedCacheKey& key,
                                 const std::vector<const kernels::LinearWeight*>& weights);

}  // namespace lmrun
