#include "core/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

namespace lmrun {

void AlignedFree::operator()(void* pointer) const {
    std::free(pointer);
}

std::unique_ptr<void, AlignedFree> aligned_alloc_bytes(size_t size_bytes) {
    size_t rounded = (size_bytes + 63) / 64 * 64;
    void* pointer = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    LMRUN_CHECK(pointer != nullptr, "out of memory allocating %zu bytes", size_bytes);
    return std::unique_ptr<void, AlignedFree>(pointer);
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
    Tensor tensor;
    tensor.dtype_ = dtype;
    tensor.shape_ = std::move(shape);
    const size_t nbytes = tensor.nbytes();
    if (nbytes >= kLazyZerosBytes) {
        // Fresh anonymous pages read as zero and are committed on first write: no memset, and a
        // buffer sized for the largest step costs memory only for the rows steps use.
        void* mapped = mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        LMRUN_CHECK(mapped != MAP_FAILED, "out of memory mapping %zu bytes", nbytes);
        tensor.data_ = mapped;
        tensor.owner_ = std::shared_ptr<void>(mapped, [nbytes](void* pointer) { munmap(pointer, nbytes); });
        return tensor;
    }
    auto buffer = aligned_alloc_bytes(nbytes);
    std::memset(buffer.get(), 0, tensor.nbytes());
    tensor.data_ = buffer.get();
    tensor.owner_ = std::shared_ptr<void>(buffer.release(), AlignedFree());
    return tensor;
}

Tensor Tensor::view(void* data, DType dtype, std::vector<int64_t> shape) {
    Tensor tensor;
    tensor.dtype_ = dtype;
    tensor.shape_ = std::move(shape);
    tensor.data_ = data;
    return tensor;
}

int64_t Tensor::numel() const {
    int64_t count = 1;
    for (int64_t extent : shape_) count *= extent;
    return count;
}

std::string Tensor::shape_string() const {
    std::string text = "[";
    for (size_t i = 0; i < shape_.size(); ++i) {
        if (i) text += ", ";
        text += std::to_string(shape_[i]);
    }
    return text + "]";
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
    LMRUN_CHECK(rank() >= 1 && begin >= 0 && begin <= end && end <= shape_[0], "bad slice");
    Tensor result = *this;
    int64_t row_elements = shape_[0] == 0 ? 0 : numel() / shape_[0];
    result.shape_[0] = end - begin;
    result.data_ = static_cast<char*>(data_) + begin * row_elements * dtype_size_bytes(dtype_);
    return result;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
    Tensor result = *this;
    result.shape_ = std::move(shape);
    LMRUN_CHECK(result.numel() == numel(), "reshape changes the element count");
    return result;
}

}  // namespace lmrun
