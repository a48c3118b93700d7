#include "engine/kv_disk_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "core/file_times.h"

#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t on the stack: no allocation per read
#include <xxhash.h>

namespace lmrun {

namespace {

constexpr char kMagic[8] = {'L', 'M', 'R', 'U', 'N', 'K', 'V', '1'};
constexpr uint32_t kVersion = 1;
constexpr char kBlockSuffix[] = ".kvb";
constexpr char kTempSuffix[] = ".kvtmp";
constexpr size_t kPathBytes = 4096;

struct FileHeader {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint64_t model_id;
    uint64_t block_hash;
    uint64_t payload_bytes;
    uint64_t payload_hash;
    uint64_t header_hash;  // of the 48 bytes above
    uint64_t reserved;
};
static_assert(sizeof(FileHeader) == KvDiskStore::kHeaderBytes, "header layout");
constexpr size_t kHashedHeaderBytes = offsetof(FileHeader, header_hash);

bool ends_with(const char* name, const char* suffix) {
    const size_t name_len = std::strlen(name), suffix_len = std::strlen(suffix);
    return name_len >= suffix_len && std::strcmp(name + name_len - suffix_len, suffix) == 0;
}

template <typename Segments>
int64_t total_bytes(Segments segments) {
    int64_t total = 0;
    for (const auto& segment : segments) total += int64_t(segment.size());
    return total;
}

template <typename Segments>
uint64_t payload_hash(Segments segments) {
    XXH64_state_t state;
    XXH64_reset(&state, 0);
    for (const auto& segment : segments) XXH64_update(&state, segment.data(), segment.size());
    return XXH64_digest(&state);
}

bool pread_all(int fd, void* data, size_t size, off_t offset) {
    auto* bytes = static_cast<char*>(data);
    while (size > 0) {
        const ssize_t got = pread(fd, bytes, size, offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        bytes += got;
        size -= size_t(got);
        offset += got;
    }
    return true;
}

bool write_all(int fd, const void* data, size_t size) {
    const auto* bytes = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t put = write(fd, bytes, size);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return false;
        bytes += put;
        size -= size_t(put);
    }
    return true;
}

struct DirEntry {
    std::string name;
    int64_t bytes;
    int64_t mtime_ns;
    bool is_temp;
};

std::vector<DirEntry> list_store_files(const std::string& dir) {
    std::vector<DirEntry> entries;
    DIR* handle = opendir(dir.c_str());
    if (!handle) return entries;
    const int dir_fd = dirfd(handle);
    while (const dirent* entry = readdir(handle)) {
        const bool is_block = ends_with(entry->d_name, kBlockSuffix);
        const bool is_temp = ends_with(entry->d_name, kTempSuffix);
        if (!is_block && !is_temp) continue;
        struct stat st {};
        if (fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        entries.push_back({entry->d_name, int64_t(st.st_size),
                           int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, is_temp});
    }
    closedir(handle);
    return entries;
}

}  // namespace

Result<std::unique_ptr<KvDiskStore>> KvDiskStore::open(const std::string& dir, int64_t capacity_bytes) {
    auto bad_dir = [&dir](const char* what) {
        return with_subject(make_error("--kv-offload-dir {}: {}", dir, what), dir);
    };
    if (dir.empty()) return bad_dir("empty path");
    if (capacity_bytes < kHeaderBytes) return bad_dir("size bound smaller than one block file");
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return bad_dir(std::strerror(errno));
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) return bad_dir(std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) return bad_dir("not a directory");
    if (access(dir.c_str(), R_OK | W_OK | X_OK) != 0) return bad_dir("not readable and writable");
    const std::string lock_path = dir + "/.lock";
    const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0) return bad_dir("cannot create its .lock file");
    return std::unique_ptr<KvDiskStore>(new KvDiskStore(dir, capacity_bytes, lock_fd));
}

KvDiskStore::~KvDiskStore() {
    close(lock_fd_);
}

void KvDiskStore::block_path(const KvBlockKey& key, char* path, size_t path_size) const {
    std::snprintf(path, path_size, "%s/%016llx-%016llx%s", dir_.c_str(), (unsigned long long)key.model_id,
                  (unsigned long long)key.block_hash, kBlockSuffix);
}

bool KvDiskStore::contains(const KvBlockKey& key) {
    char path[kPathBytes];
    block_path(key, path, sizeof(path));
    return access(path, R_OK) == 0;
}

bool KvDiskStore::get(const KvBlockKey& key, std::span<const std::span<std::byte>> segments) {
    char path[kPathBytes];
    block_path(key, path, sizeof(path));
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        stats_.misses.fetch_add(1);
        return false;
    }
    const bool verified = read_verified(fd, key, segments);
    if (verified) mark_used_now(fd);  // recently used: evicted last
    close(fd);
    if (!verified) {
        // Torn or corrupt: nobody can use it, and it holds room in the bound.
        unlink(path);
        stats_.corrupt.fetch_add(1);
        stats_.misses.fetch_add(1);
        return false;
    }
    stats_.hits.fetch_add(1);
    stats_.bytes_read.fetch_add(total_bytes(segments));
    return true;
}

bool KvDiskStore::read_verified(int fd, const KvBlockKey& key,
                                std::span<const std::span<std::byte>> segments) {
    const int64_t payload_bytes = total_bytes(segments);
    struct stat st {};
    if (fstat(fd, &st) != 0 || int64_t(st.st_size) != kHeaderBytes + payload_bytes) return false;
    FileHeader header{};
    if (!pread_all(fd, &header, sizeof(header), 0)) return false;
    if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0 || header.version != kVersion ||
        header.header_bytes != kHeaderBytes || header.model_id != key.model_id ||
        header.block_hash != key.block_hash || header.payload_bytes != uint64_t(payload_bytes) ||
        header.header_hash != XXH64(&header, kHashedHeaderBytes, 0)) {
        return false;
    }
    XXH64_state_t state;
    XXH64_reset(&state, 0);
    off_t offset = kHeaderBytes;
    for (const std::span<std::byte>& segment : segments) {
        if (!pread_all(fd, segment.data(), segment.size(), offset)) return false;
        XXH64_update(&state, segment.data(), segment.size());
        offset += off_t(segment.size());
    }
    return XXH64_digest(&state) == header.payload_hash;
}

Status KvDiskStore::put(const KvBlockKey& key, std::span<const std::span<const std::byte>> segments) {
    const int64_t file_bytes = kHeaderBytes + total_bytes(segments);
    if (file_bytes > capacity_bytes_) {
        stats_.failed_puts.fetch_add(1);
        return make_error(ErrorKind::ResourceExhausted,
                          "--kv-offload-dir {}: a block of {} bytes exceeds the {} byte bound", dir_,
                          file_bytes, capacity_bytes_);
    }
    char path[kPathBytes];
    block_path(key, path, sizeof(path));
    std::lock_guard<std::mutex> lock(put_mutex_);
    while (flock(lock_fd_, LOCK_EX) != 0) {
        if (errno != EINTR) {
            stats_.failed_puts.fetch_add(1);
            return make_error(ErrorKind::Internal, "--kv-offload-dir {}: cannot lock: {}", dir_,
                              std::strerror(errno));
        }
    }
    Status status = ok_status();
    if (const int fd = ::open(path, O_RDONLY | O_CLOEXEC); fd >= 0) {
        mark_used_now(fd);  // already stored (by another replica): keep it, fresher
        close(fd);
    } else {
        status = make_room(file_bytes);
        if (status.ok()) status = write_block(key, segments, path);
    }
    flock(lock_fd_, LOCK_UN);
    if (!status.ok()) stats_.failed_puts.fetch_add(1);
    return status;
}

// Under the lock: temporary files are leftovers of a writer that died; then least recently
// used blocks go until file_bytes more fit.
Status KvDiskStore::make_room(int64_t file_bytes) {
    std::vector<DirEntry> entries = list_store_files(dir_);
    int64_t used = 0;
    for (const DirEntry& entry : entries) {
        if (entry.is_temp) {
            unlinkat(AT_FDCWD, (dir_ + "/" + entry.name).c_str(), 0);
            continue;
        }
        used += entry.bytes;
    }
    std::erase_if(entries, [](const DirEntry& entry) { return entry.is_temp; });
    std::sort(entries.begin(), entries.end(),
              [](const DirEntry& a, const DirEntry& b) { return a.mtime_ns < b.mtime_ns; });
    for (const DirEntry& entry : entries) {
        if (used + file_bytes <= capacity_bytes_) break;
        if (unlink((dir_ + "/" + entry.name).c_str()) != 0 && errno != ENOENT) continue;
        used -= entry.bytes;
        stats_.evictions.fetch_add(1);
    }
    if (used + file_bytes > capacity_bytes_) {
        return make_error(ErrorKind::ResourceExhausted, "--kv-offload-dir {}: cannot free room for a block",
                          dir_);
    }
    return ok_status();
}

Status KvDiskStore::write_block(const KvBlockKey& key, std::span<const std::span<const std::byte>> segments,
                                const char* final_path) {
    FileHeader header{};
    std::memcpy(header.magic, kMagic, sizeof(kMagic));
    header.version = kVersion;
    header.header_bytes = kHeaderBytes;
    header.model_id = key.model_id;
    header.block_hash = key.block_hash;
    header.payload_bytes = uint64_t(total_bytes(segments));
    header.payload_hash = payload_hash(segments);
    header.header_hash = XXH64(&header, kHashedHeaderBytes, 0);

    const std::string temp_path = fmt::format("{}/{}-{}{}", dir_, getpid(), next_temp_id_++, kTempSuffix);
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return make_error(ErrorKind::Internal, "{}: cannot create: {}", temp_path, std::strerror(errno));
    bool written = write_all(fd, &header, sizeof(header));
    for (const auto& segment : segments) written = written && write_all(fd, segment.data(), segment.size());
    const int saved_errno = errno;
    if (written) mark_used_now(fd);
    written = (close(fd) == 0) && written;
    // rename() is atomic: readers see the whole file or none.
    if (!written || rename(temp_path.c_str(), final_path) != 0) {
        unlink(temp_path.c_str());
        return make_error(ErrorKind::Internal, "{}: cannot write the block: {}", final_path,
                          std::strerror(written ? errno : saved_errno));
    }
    stats_.puts.fetch_add(1);
    stats_.bytes_written.fetch_add(int64_t(header.payload_bytes));
    return ok_status();
}

int64_t KvDiskStore::used_bytes() const {
    int64_t used = 0;
    for (const DirEntry& entry : list_store_files(dir_)) used += entry.bytes;
    return used;
}

}  // namespace lmrun
