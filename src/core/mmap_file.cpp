#include "core/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/memory_info.h"

namespace lmrun {

Result<std::shared_ptr<MmapFile>> MmapFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return with_subject(
            make_error(ErrorKind::NotFound, "{}: cannot open: {}", path, std::strerror(errno)), path);
    struct stat info {};
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        return with_subject(make_error(ErrorKind::NotFound, "{}: not a regular file", path), path);
    }
    std::shared_ptr<MmapFile> file(new MmapFile());
    file->path_ = path;
    file->size_bytes_ = size_t(info.st_size);
    if (file->size_bytes_ > 0) {
        void* mapped = mmap(nullptr, file->size_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped == MAP_FAILED) {
            ::close(fd);
            return with_subject(
                make_error(ErrorKind::ResourceExhausted, "{}: mmap failed: {}", path, std::strerror(errno)),
                path);
        }
        file->data_ = static_cast<const unsigned char*>(mapped);
        if (int64_t(file->size_bytes_) < available_memory_bytes() / 2)
            madvise(mapped, file->size_bytes_, MADV_WILLNEED);  // advice only; failure is harmless
    }
    ::close(fd);
    return file;
}

void MmapFile::release(const void* begin, size_t bytes) const {
    if (!data_ || bytes == 0) return;
    const auto* first = static_cast<const unsigned char*>(begin);
    if (first < data_ || first >= data_ + size_bytes_) return;
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t start = reinterpret_cast<uintptr_t>(first) / page * page;
    const uintptr_t end = std::min(reinterpret_cast<uintptr_t>(first) + bytes,
                                   reinterpret_cast<uintptr_t>(data_) + size_bytes_);
    const uintptr_t end_page = (end + page - 1) / page * page;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a page-aligned address inside our own mapping.
    madvise(reinterpret_cast<void*>(start), end_page - start, MADV_DONTNEED);  // advice; failure is harmless
}

MmapFile::~MmapFile() {
    if (data_) munmap(const_cast<unsigned char*>(data_), size_bytes_);
}

}  // namespace lmrun
