// Shared by the libFuzzer targets: the test data folder, an in-memory file for the readers
// that take a path, and a trap for properties that must hold for every accepted input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lmrun::fuzz {

// ../shared/testdata (LMRUN_TESTDATA overrides it).
std::string testdata_path(const std::string& relative);
// The whole file, or "" when it cannot be read.
std::string read_file(const std::string& path);

// A memfd: each write() replaces its contents; path() opens it like any file.
class MemoryFile {
  public:
    explicit MemoryFile(const char* name);
    ~MemoryFile();
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;
    void write(const uint8_t* data, size_t size);
    const std::string& path() const { return path_; }

  private:
    int fd_ = -1;
    std::string path_;
};

// Aborts with `what` when a property of an accepted input does not hold: libFuzzer
// records the input as a crash.
void require(bool property, const char* what);

}  // namespace lmrun::fuzz
