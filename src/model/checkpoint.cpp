#include "model/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/json_io.h"

namespace lmrun {
namespace {

namespace fs = std::filesystem;

// weight_map as tensor name -> shard file name, validated.
Result<std::map<std::string, std::string>> parse_weight_map(const nlohmann::json& index,
                                                            const std::string& path) {
    if (!index.is_object())
        return make_error_about(path, ErrorKind::Corrupt, "{}: index is not a JSON object", path);
    auto it = index.find("weight_map");
    if (it == index.end() || !it->is_object())
        return make_error_about(path, ErrorKind::Corrupt, "{}: missing or non-object 'weight_map'", path);
    std::map<std::string, std::string> weight_map;
    for (auto entry = it->begin(); entry != it->end(); ++entry) {
        if (!entry.value().is_string())
            return make_error_about(path, ErrorKind::Corrupt,
                                    "{}: weight_map entry '{}' is not a file name string", path, entry.key());
        std::string shard = entry.value().get<std::string>();
        // Shards live next to the index; a path component would let the index reach elsewhere.
        if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
            return make_error_about(path, ErrorKind::Corrupt,
                                    "{}: weight_map entry '{}' names an invalid shard file '{}'", path,
                                    entry.key(), shard);
        weight_map[entry.key()] = shard;
    }
    if (weight_map.empty())
        return make_error_about(path, ErrorKind::Corrupt, "{}: 'weight_map' is empty", path);
    return weight_map;
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const std::string& model_dir) {
    std::error_code error;
    if (!fs::is_directory(model_dir, error))
        return with_subject(
            make_error(ErrorKind::NotFound, "{}: model folder not found (or not a directory)", model_dir),
            model_dir);
    Checkpoint checkpoint;
    checkpoint.dir_ = model_dir;
    std::string index_path = (fs::path(model_dir) / kIndexFileName).string();
    std::string single_path = (fs::path(model_dir) / kSingleFileName).string();
    if (fs::exists(index_path, error)) {
        LMRUN_RETURN_IF_ERROR(checkpoint.open_sharded(index_path));
    } else if (fs::exists(single_path, error)) {
        LMRUN_RETURN_IF_ERROR(checkpoint.open_single(single_path));
    } else {
        return with_subject(make_error(ErrorKind::NotFound, "{}: no weights file: neither {} nor {} exists",
                                       model_dir, kSingleFileName, kIndexFileName),
                            model_dir);
    }
    return checkpoint;
}

Status Checkpoint::open_single(const std::string& path) {
    LMRUN_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
    files_.push_back(std::move(file));
    for (const TensorInfo& tensor : files_.back().tensors()) by_name_[tensor.name] = &tensor;
    return ok_status();
}

Status Checkpoint::open_sharded(const std::string& index_path) {
    // An index lists every tensor once: a few MB for the largest models.
    LMRUN_ASSIGN_OR_RETURN(nlohmann::json index, read_json_file(index_path, JsonLimits{8, size_t(64) << 20}));
    LMRUN_ASSIGN_OR_RETURN(auto weight_map, parse_weight_map(index, index_path));
    std::map<std::string, size_t> file_index_by_shard;
    for (const auto& [name, shard] : weight_map) {
        if (file_index_by_shard.count(shard)) continue;
        std::string shard_path = (fs::path(dir_) / shard).string();
        std::error_code error;
        if (!fs::exists(shard_path, error))
            return with_subject(
                make_error(ErrorKind::NotFound, "{}: shard '{}' (for tensor '{}') does not exist", index_path,
                           shard, name),
                shard_path);
        LMRUN_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(shard_path));
        file_index_by_shard[shard] = files_.size();
        files_.push_back(std::move(file));
    }
    // Pointers are taken only now: files_ no longer reallocates.
    for (const auto& [name, shard] : weight_map) {
        const SafetensorsFile& file = files_[file_index_by_shard[shard]];
        const TensorInfo* tensor = file.find(name);
        if (tensor == nullptr)
            return make_error_about(index_path, ErrorKind::Corrupt,
                                    "{}: tensor '{}' is mapped to shard '{}' but {} has no such tensor",
                                    index_path, name, shard, file.path());
        by_name_[name] = tensor;
    }
    return ok_status();
}

const TensorInfo* Checkpoint::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
}

void Checkpoint::release_tensors(std::string_view prefix) const {
    for (const auto& [name, tensor] : by_name_) {
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        for (const SafetensorsFile& file : files_) {
            if (file.release(*tensor)) break;
        }
    }
}

Result<const TensorInfo*> Checkpoint::get(std::string_view name) const {
    const TensorInfo* tensor = find(name);
    if (tensor == nullptr)
        return with_subject(
            make_error(ErrorKind::Corrupt, "{}: tensor {} not found in any of the {} safetensors files", dir_,
                       name, files_.size()),
            dir_);
    return tensor;
}

std::vector<std::string> Checkpoint::tensor_names() const {
    std::vector<std::string> names;
    names.reserve(by_name_.size());
    for (const auto& [name, tensor] : by_name_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
}

size_t Checkpoint::total_nbytes() const {
    size_t total = 0;
    for (const auto& [name, tensor] : by_name_) total += tensor->nbytes;
    return total;
}

}  // namespace lmrun
