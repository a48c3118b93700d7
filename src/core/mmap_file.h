// A read-only memory-mapped file. Checkpoint tensors are views into it, so
// loading a model does not copy weights that are used as stored.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/result.h"

namespace lmrun {

class MmapFile {
  public:
    static Result<std::shared_ptr<MmapFile>> open(const std::string& path);
    ~MmapFile();
    MmapFile(const MmapFile&) = delete;
    MmapFile& operator=(const MmapFile&) = delete;

    const std::string& path() const { return path_; }
    const unsigned char* data() const { return data_; }
    size_t size_bytes() const { return size_bytes_; }

  private:
    MmapFile() = default;
    std::string path_;
    const unsigned char* data_ = nullptr;
    size_t size_bytes_ = 0;
};

}  // namespace lmrun
