#include "parallel/shared_memory.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace lmrun::parallel {
namespace {

Result<std::byte*> map_shared(int fd, size_t bytes) {
    void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (address == MAP_FAILED)
        return make_error(ErrorKind::ResourceExhausted, "cannot map {} bytes of shared memory: {}", bytes,
                          std::strerror(errno));
    return static_cast<std::byte*>(address);
}

}  // namespace

Result<SharedMemory> SharedMemory::create(const std::string& name, size_t bytes) {
    int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd < 0)
        return make_error(ErrorKind::Internal, "memfd_create({}) failed: {}", name, std::strerror(errno));
    if (ftruncate(fd, off_t(bytes)) != 0) {
        int error = errno;
        close(fd);
        return make_error(ErrorKind::ResourceExhausted, "cannot size shared memory {} to {} bytes: {}", name,
                          bytes, std::strerror(error));
    }
    auto data = map_shared(fd, bytes);
    if (!data.ok()) {
        close(fd);
        return data.error();
    }
    SharedMemory memory;
    memory.fd_ = fd;
    memory.size_ = bytes;
    memory.data_ = data.value();
    return memory;
}

Result<SharedMemory> SharedMemory::attach(int fd) {
    struct stat info {};
    if (fstat(fd, &info) != 0 || info.st_size <= 0)
        return make_error(ErrorKind::Internal, "descriptor {} is not a shared memory segment", fd);
    LMRUN_ASSIGN_OR_RETURN(std::byte * data, map_shared(fd, size_t(info.st_size)));
    SharedMemory memory;
    memory.fd_ = fd;
    memory.size_ = size_t(info.st_size);
    memory.data_ = data;
    return memory;
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
    if (this != &other) {
        this->~SharedMemory();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

SharedMemory::~SharedMemory() {
    if (data_) munmap(data_, size_);
    if (fd_ >= 0) close(fd_);
}

}  // namespace lmrun::parallel
