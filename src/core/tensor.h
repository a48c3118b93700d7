// A dense, row-major tensor: dtype, shape and a 64-byte aligned buffer that the
// tensor either owns or borrows (a view into an arena or a memory-mapped file).
// Tensors are the op layer's currency; kernels (src/kernels) take raw pointers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"

namespace lmrun {

inline constexpr size_t kLazyZerosBytes = size_t(1) << 20;

class Tensor {
  public:
    Tensor() = default;

    // Allocates an owned, zero-filled, 64-byte aligned buffer; from kLazyZerosBytes up, fresh
    // pages of the OS (page-aligned), committed only where written.
    static Tensor zeros(DType dtype, std::vector<int64_t> shape);
    // Borrows `data`; the caller keeps it alive for the tensor's lifetime.
    static Tensor view(void* data, DType dtype, std::vector<int64_t> shape);

    DType dtype() const { return dtype_; }
    const std::vector<int64_t>& shape() const { return shape_; }
    int64_t dim(int index) const { return shape_[index < 0 ? shape_.size() + index : index]; }
    int rank() const { return int(shape_.size()); }
    int64_t numel() const;
    size_t nbytes() const { return size_t(numel()) * dtype_size_bytes(dtype_); }
    bool empty() const { return data_ == nullptr; }
    std::string shape_string() const;

    void* raw() { return data_; }
    const void* raw() const { return data_; }
    template <typename T>
    T* data() {
        return static_cast<T*>(data_);
    }
    template <typename T>
    const T* data() const {
        return static_cast<const T*>(data_);
    }

    // A view of rows [begin, end) along the first dimension.
    Tensor slice_rows(int64_t begin, int64_t end) const;
    // The same bytes under another shape with the same element count.
    Tensor reshape(std::vector<int64_t> shape) const;

  private:
    DType dtype_ = DType::F32;
    std::vector<int64_t> shape_;
    void* data_ = nullptr;
    std::shared_ptr<void> owner_;
};

// 64-byte aligned allocation for buffers that kernels stream through.
struct AlignedFree {
    void operator()(void* pointer) const;
};
std::unique_ptr<void, AlignedFree> aligned_alloc_bytes(size_t size_bytes);

}  // namespace lmrun
