// The model identity half of a KvBlockKey: two engines may share a stored KV block only if
// they would have computed the same bytes. It hashes the checkpoint (config.json's bytes;
// each safetensors file's name, size and 16 sampled 4 KiB pieces of its data, which tell
// two fine-tunes of one shape apart without reading gigabytes), the weight dtype, the KV
// cache's layout (dtype, layers, block size, KV heads on this rank, head_dim), the
// tensor-parallel rank and size, and a format version.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "engine/kv_cache.h"

namespace lmrun {

uint64_t kv_model_id(const std::string& model_dir, DType weight_dtype, const KvCacheShape& kv_shape,
                     int tp_rank, int tp_size);

}  // namespace lmrun
