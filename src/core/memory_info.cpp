#include "core/memory_info.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace lmrun {
namespace {

// Reads "Key:   123 kB" lines of a /proc file.
int64_t read_kb_field(const char* path, const char* key) {
    std::ifstream in(path);
    std::string line;
    const size_t key_length = std::strlen(key);
    while (std::getline(in, line)) {
        if (line.compare(0, key_length, key) == 0 && line.size() > key_length && line[key_length] == ':') {
            return std::stoll(line.substr(key_length + 1)) * 1024;
        }
    }
    return 0;
}

int64_t cgroup_limit_bytes() {
    std::ifstream in("/sys/fs/cgroup/memory.max");
    std::string text;
    if (!(in >> text) || text == "max") return 0;
    return std::stoll(text);
}

int64_t cgroup_usage_bytes() {
    std::ifstream in("/sys/fs/cgroup/memory.current");
    int64_t value = 0;
    in >> value;
    return value;
}

}  // namespace

int64_t resident_memory_bytes() {
    return read_kb_field("/proc/self/status", "VmRSS");
}
int64_t peak_resident_memory_bytes() {
    return read_kb_field("/proc/self/status", "VmHWM");
}

void reset_peak_resident_memory() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

int64_t available_memory_bytes() {
    int64_t available = read_kb_field("/proc/meminfo", "MemAvailable");
    int64_t limit = cgroup_limit_bytes();
    if (limit > 0) available = std::min(available, limit - cgroup_usage_bytes());
    return std::max<int64_t>(available, 0);
}

}  // namespace lmrun
