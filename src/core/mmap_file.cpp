#include "core/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
    }
    ::close(fd);
    return file;
}

MmapFile::~MmapFile() {
    if (data_) munmap(const_cast<unsigned char*>(data_), size_bytes_);
}

}  // namespace lmrun
