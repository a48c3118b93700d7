// KvDiskStore: the KvBlockStore on local disk. One file per block in one directory,
// `<model_id>-<block_hash>.kvb` (16 hex digits each), shared by every process of the
// machine that opens the same directory (replicas, and the same server after a restart).
//
// File: a 64-byte header {magic "LMRUNKV1", version, header size, model_id, block_hash,
// payload bytes, xxhash64 of the payload, xxhash64 of the header's first 48 bytes} then
// the payload. Crash safety: a block is written to a temporary file and renamed into
// place, so a reader sees either no file or a whole one; a file torn anyway (power loss
// without fsync, a disk error, someone editing the directory) fails its checksums on
// read and is then deleted and reported as a miss.
//
// Size bound: put() runs under an exclusive flock on `<dir>/.lock` (shared by every
// process using the directory): it lists the directory, deletes temporary files left by a
// writer that died (only a put holding the lock writes them), evicts the least recently
// used blocks (oldest mtime; a hit touches its file) until the new block fits, then writes
// it. The directory's block and temporary files therefore never exceed capacity_bytes.
// Listing costs one stat per file per put: fine for blocks of MiBs (a 10 GiB store of
// Qwen3-0.6B's 29 MiB blocks holds ~350 files).
//
// get() and contains() take no lock and allocate nothing (file names are formatted into
// fixed buffers), so the engine thread can call them while a writer thread puts.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "engine/kv_block_store.h"

namespace lmrun {

class KvDiskStore final : public KvBlockStore {
  public:
    static constexpr int64_t kHeaderBytes = 64;

    // Opens `dir` (created if missing; its parent must exist) as a store of at most
    // capacity_bytes. An InvalidArgument error names the directory when it cannot be
    // created, is not a directory or is not writable.
    static Result<std::unique_ptr<KvDiskStore>> open(const std::string& dir, int64_t capacity_bytes);
    ~KvDiskStore() override;

    bool contains(const KvBlockKey& key) override;
    bool get(const KvBlockKey& key, std::span<const std::span<std::byte>> segments) override;
    Status put(const KvBlockKey& key, std::span<const std::span<const std::byte>> segments) override;

    const std::string& dir() const { return dir_; }
    int64_t capacity_bytes() const { return capacity_bytes_; }
    // Bytes of block and temporary files in the directory now (lists it).
    int64_t used_bytes() const;

  private:
    KvDiskStore(std::string dir, int64_t capacity_bytes, int lock_fd)
        : dir_(std::move(dir)), capacity_bytes_(capacity_bytes), lock_fd_(lock_fd) {}
    // Writes `<dir>/<model_id>-<block_hash>.kvb` into `path` (a fixed buffer).
    void block_path(const KvBlockKey& key, char* path, size_t path_size) const;
    bool read_verified(int fd, const KvBlockKey& key, std::span<const std::span<std::byte>> segments);
    Status make_room(int64_t file_bytes);
    Status write_block(const KvBlockKey& key, std::span<const std::span<const std::byte>> segments,
                       const char* final_path);

    std::string dir_;
    int64_t capacity_bytes_;
    int lock_fd_;
    std::mutex put_mutex_;  // flock is per open file: threads of this process take this first
    uint64_t next_temp_id_ = 0;
};

}  // namespace lmrun
