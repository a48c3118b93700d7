// Writes .safetensors files (see safetensors.h for the layout). The header is padded
// with spaces to a multiple of 8 bytes so every tensor starts 8-byte aligned, and
// tensors are stored in the order given, back to back.
// SafetensorsWriter streams: the header is fixed up front from names, dtypes and shapes,
// then the data of each tensor is appended in order, so a large checkpoint never has to
// be in memory at once. write_safetensors() is the one-call form.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"

namespace lmrun {

struct TensorToWrite {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr;  // numel * dtype size bytes, row-major
};

size_t tensor_nbytes(DType dtype, const std::vector<int64_t>& shape);

class SafetensorsWriter {
  public:
    // Validates names (non-empty, unique, not "__metadata__") and shapes, writes the header.
    // The `data` fields of `tensors` are ignored.
    static Result<SafetensorsWriter> create(const std::string& path,
                                            const std::vector<TensorToWrite>& tensors,
                                            const std::map<std::string, std::string>& metadata = {});
    // Appends the data of the next tensor, in the order given to create().
    Status write_next(const void* data, size_t nbytes);
    // Checks every tensor was written and closes the file.
    Status finish();

  private:
    struct FileCloser {
        void operator()(std::FILE* file) const;
    };
    std::string path_;
    std::unique_ptr<std::FILE, FileCloser> file_;
    std::vector<size_t> tensor_nbytes_;
    std::vector<std::string> tensor_names_;
    size_t next_tensor_ = 0;
};

Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace lmrun
