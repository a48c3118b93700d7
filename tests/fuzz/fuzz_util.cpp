#include "fuzz_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace lmrun::fuzz {

std::string testdata_path(const std::string& relative) {
    const char* dir = std::getenv("LMRUN_TESTDATA");
    return std::string(dir != nullptr ? dir : LMRUN_TESTDATA_DIR) + "/" + relative;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

MemoryFile::MemoryFile(const char* name) : fd_(memfd_create(name, 0)) {
    require(fd_ >= 0, "memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemoryFile::~MemoryFile() {
    close(fd_);
}

void MemoryFile::write(const uint8_t* data, size_t size) {
    require(ftruncate(fd_, 0) == 0, "ftruncate failed");
    size_t written = 0;
    while (written < size) {
        ssize_t count = pwrite(fd_, data + written, size - written, off_t(written));
        require(count > 0, "pwrite failed");
        written += size_t(count);
    }
}

void require(bool property, const char* what) {
    if (property) return;
    std::fprintf(stderr, "fuzz property violated: %s\n", what);
    std::abort();
}

}  // namespace lmrun::fuzz
