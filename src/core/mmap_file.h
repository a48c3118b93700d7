// A read-only memory-mapped file. Checkpoint tensors are views into it, so
// loading a model does not copy weights that are used as stored. Opening asks
// the OS to read the file ahead (files up to half the available RAM), so a cold
// start reads at the disk's sequential speed while the first tensors are packed.
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
    // Drops the pages of [begin, begin + bytes) (widened to whole pages, clamped to the file)
    // from this process's resident set once they have been copied out: the mapping is private
    // and never written, so a later read finds them again in the page cache. Keeps loading
    // from holding the file and the packed weights in memory at once.
    void release(const void* begin, size_t bytes) const;

  private:
    MmapFile() = default;
    std::string path_;
    const unsigned char* data_ = nullptr;
    size_t size_bytes_ = 0;
};

}  // namespace lmrun
