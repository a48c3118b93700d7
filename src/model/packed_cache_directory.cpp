#include "model/packed_cache_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/logging.h"

namespace lmrun {
namespace {

constexpr char kPackedFileSuffix[] = ".lmpack";
constexpr char kPackedTempSuffix[] = ".tmp";
constexpr double kGiB = double(int64_t(1) << 30);

// The directory's lock, held while its files are removed and one is written: writers on the
// same directory (replicas and ranks starting together) take turns.
class PackedCacheDirLock {
  public:
    explicit PackedCacheDirLock(const std::string& dir) {
        fd_ = ::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        while (fd_ >= 0 && flock(fd_, LOCK_EX) != 0) {
            if (errno != EINTR) {
                ::close(fd_);
                fd_ = -1;
            }
        }
    }
    ~PackedCacheDirLock() {
        if (fd_ >= 0) ::close(fd_);  // releases the lock
    }
    PackedCacheDirLock(const PackedCacheDirLock&) = delete;
    PackedCacheDirLock& operator=(const PackedCacheDirLock&) = delete;
    bool held() const { return fd_ >= 0; }

  private:
    int fd_ = -1;
};

struct PackedCacheFile {
    std::filesystem::path path;
    int64_t bytes = 0;
    std::filesystem::file_time_type used;  // modification time: stamped on every use
};

// Under the lock: a temporary file is a dead writer's, since writers hold the lock; a packed
// file whose model folder is gone (or that cannot be read) can never be used again. Returns
// the files that stay.
std::vector<PackedCacheFile> remove_dead_files(const std::string& dir) {
    std::vector<PackedCacheFile> kept;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
        const std::string name = entry.path().filename().string();
        std::error_code entry_error;
        if (!entry.is_regular_file(entry_error)) continue;
        const bool is_temp = name.ends_with(kPackedTempSuffix);
        if (!is_temp && !name.ends_with(kPackedFileSuffix)) continue;
        bool dead = is_temp;
        if (!dead) {
            Result<std::string> identity = read_packed_cache_identity(entry.path().string());
            const std::string folder = identity.ok() ? packed_cache_model_folder(identity.value()) : "";
            dead = folder.empty() ||
                   !std::filesystem::exists(std::filesystem::path(folder) / "config.json", entry_error);
        }
        if (dead) {
            std::filesystem::remove(entry.path(), entry_error);
            if (!is_temp)
                log_info("packed cache: removed {} (its model folder is gone)", entry.path().string());
            continue;
        }
        kept.push_back(
            {entry.path(), int64_t(entry.file_size(entry_error)), entry.last_write_time(entry_error)});
    }
    return kept;
}

// Whether `bytes` more leave at least a tenth of the file system (and 1 GiB) free: a cache
// must not be what fills a disk.
bool leaves_disk_room(const std::string& dir, int64_t bytes, std::string& why_not) {
    struct statvfs info {};
    if (statvfs(dir.c_str(), &info) != 0) return true;  // unknown: the write itself will tell
    const double available = double(info.f_bavail) * double(info.f_frsize);
    const double reserve = std::max(double(info.f_blocks) * double(info.f_frsize) / 10, kGiB);
    if (double(bytes) + reserve <= available) return true;
    why_not = fmt::format("{:.1f} GiB would leave less than {:.1f} GiB free on its file system",
                          double(bytes) / kGiB, reserve / kGiB);
    return false;
}

}  // namespace

std::string default_packed_cache_dir() {
    if (const char* dir = std::getenv("LMRUN_CACHE_DIR"); dir && *dir) return std::string(dir) + "/packed";
    if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir)
        return std::string(dir) + "/lmrun/packed";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.cache/lmrun/packed";
    return "";
}

std::string packed_cache_dir_from_option(const std::string& option) {
    if (option.empty()) return default_packed_cache_dir();
    if (option == "none") return "";
    return option;
}

Result<bool> store_packed_cache(const PackedCacheOptions& options, const PackedCacheKey& key,
                                const std::vector<const kernels::LinearWeight*>& weights,
                                const std::function<void()>& before_each_piece) {
    const std::string& dir = options.dir;
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error)
        return make_error_about(dir, ErrorKind::Unavailable, "{}: cannot create the directory: {}", dir,
                                error.message());
    const PackedCacheDirLock lock(dir);
    if (!lock.held())
        return make_error_about(dir, ErrorKind::Unavailable, "{}: cannot lock the directory: {}", dir,
                                std::strerror(errno));
    // A replica or rank of the same model may have written it while this one waited for the lock.
    Result<std::string> existing = read_packed_cache_identity(key.path);
    if (existing.ok() && existing.value() == key.identity) return false;

    const int64_t file_bytes = int64_t(packed_cache_file_bytes(key, weights));
    if (file_bytes > options.max_bytes) {
        log_info(
            "packed cache: {} not written: its {:.1f} GiB exceed the {:.1f} GiB bound (--packed-cache-size)",
            key.path, double(file_bytes) / kGiB, double(options.max_bytes) / kGiB);
        return false;
    }
    std::vector<PackedCacheFile> files = remove_dead_files(dir);
    // The file this one replaces does not count; the others go least recently used first.
    std::erase_if(files, [&](const PackedCacheFile& file) { return file.path == key.path; });
    std::sort(files.begin(), files.end(),
              [](const PackedCacheFile& a, const PackedCacheFile& b) { return a.used < b.used; });
    int64_t used = 0;
    for (const PackedCacheFile& file : files) used += file.bytes;
    for (const PackedCacheFile& file : files) {
        if (used + file_bytes <= options.max_bytes) break;
        if (std::filesystem::remove(file.path, error)) {
            used -= file.bytes;
            log_info("packed cache: removed {}, the least recently used, to stay within {:.1f} GiB",
                     file.path.string(), double(options.max_bytes) / kGiB);
        }
    }
    std::filesystem::remove(key.path, error);  // a stale file of this model: its room counts now
    std::string why_not;
    if (!leaves_disk_room(dir, file_bytes, why_not)) {
        log_info("packed cache: {} not written: {}", key.path, why_not);
        return false;
    }
    LMRUN_RETURN_IF_ERROR(write_packed_cache(key, weights, before_each_piece));
    return true;
}

}  // namespace lmrun
