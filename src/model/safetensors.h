// Reads one .safetensors file by memory-mapping it: the tensors are views into the
// mapping, never copies. Layout: 8-byte little-endian header size N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then
// the data buffer; offsets are bytes relative to the buffer's start, data row-major.
// open() validates the whole header before anything reads data: sizes against shapes, and
// the tensors tiling the data buffer exactly (no overlap, no gap, nothing past the end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mmap_file.h"
#include "core/result.h"

namespace lmrun {

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr;  // into the mapping; may be unaligned for its dtype
    size_t nbytes = 0;
    std::string file_path;  // for error messages
    // Whether `data` points into a read-only file mapping (SafetensorsFile), whose pages a loader
    // may drop once copied: they fault back in from the file. Anything else (a test's vector, a
    // buffer) must not be dropped: MADV_DONTNEED would zero it.
    bool file_mapped = false;

    int64_t numel() const;
    std::string shape_string() const;
};

// "[2, 3]" for error messages.
std::string shape_to_string(const std::vector<int64_t>& shape);

class SafetensorsFile {
  public:
    static Result<SafetensorsFile> open(const std::string& path);

    const std::string& path() const { return file_->path(); }
    // Sorted by name.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find(std::string_view name) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    // Drops the tensor's pages from the resident set (MmapFile::release); false if not ours.
    bool release(const TensorInfo& tensor) const;

  private:
    SafetensorsFile() = default;
    Status parse_header();

    std::shared_ptr<MmapFile> file_;  // shared so tensor views outlive copies of this object
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> index_by_name_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace lmrun
