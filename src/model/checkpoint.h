// A Hugging Face model folder's weights: either one model.safetensors, or
// model.safetensors.index.json ({"weight_map": {tensor name: shard file}}) plus the
// shards it names. All files stay memory-mapped while the Checkpoint lives; TensorInfo
// pointers are valid for its lifetime (and survive moving it).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "model/safetensors.h"

namespace lmrun {

inline constexpr std::string_view kSingleFileName = "model.safetensors";
inline constexpr std::string_view kIndexFileName = "model.safetensors.index.json";

class Checkpoint {
  public:
    static Result<Checkpoint> open(const std::string& model_dir);
    // Move-only: the name map points into the files this object owns.
    Checkpoint(Checkpoint&&) = default;
    Checkpoint& operator=(Checkpoint&&) = default;
    Checkpoint(const Checkpoint&) = delete;
    Checkpoint& operator=(const Checkpoint&) = delete;

    const std::string& dir() const { return dir_; }
    const TensorInfo* find(std::string_view name) const;
    // Error "DIR: tensor NAME not found in any of the N safetensors files" if absent.
    Result<const TensorInfo*> get(std::string_view name) const;
    // Sorted.
    std::vector<std::string> tensor_names() const;
    size_t total_nbytes() const;
    size_t num_files() const { return files_.size(); }
    // Drops the pages of every tensor whose name starts with `prefix` from this process's
    // resident set once they have been copied out (they stay readable: MmapFile::release).
    void release_tensors(std::string_view prefix) const;

  private:
    Checkpoint() = default;
    Status open_sharded(const std::string& index_path);
    Status open_single(const std::string& path);

    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
    };
    std::string dir_;
    std::vector<SafetensorsFile> files_;
    std::unordered_map<std::string, const TensorInfo*, StringHash, std::equal_to<>> by_name_;
};

}  // namespace lmrun
