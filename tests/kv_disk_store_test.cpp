// KvDiskStore: round trips are bit-identical, anything damaged or foreign is a miss (and
// never a crash), the directory stays within its bound, least recently used blocks go first.
#include "engine/kv_disk_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "test_util.h"

namespace lmrun {
namespace {

namespace fs = std::filesystem;
using lmrun::testing::kv_block_files;
using lmrun::testing::make_temp_dir;

// A payload of `sizes` segments filled from `seed`.
struct Payload {
    std::vector<std::vector<std::byte>> parts;

    Payload(std::vector<size_t> sizes, uint32_t seed) {
        std::mt19937 rng(seed);
        for (size_t size : sizes) {
            std::vector<std::byte> part(size);
            for (std::byte& b : part) b = std::byte(rng() & 0xff);
            parts.push_back(std::move(part));
        }
    }
    std::vector<std::span<const std::byte>> segments() const {
        return std::vector<std::span<const std::byte>>(parts.begin(), parts.end());
    }
    std::vector<std::span<std::byte>> segments() {
        return std::vector<std::span<std::byte>>(parts.begin(), parts.end());
    }
    int64_t bytes() const {
        int64_t total = 0;
        for (const auto& part : parts) total += int64_t(part.size());
        return total;
    }
};

const std::vector<size_t> kSizes = {64, 1000, 3, 4096};

std::unique_ptr<KvDiskStore> open_store(const std::string& dir, int64_t capacity = int64_t(1) << 30) {
    auto store = KvDiskStore::open(dir, capacity);
    EXPECT_TRUE(store.ok()) << store.error().message;
    return std::move(store).value();
}

bool get_block(KvDiskStore& store, const KvBlockKey& key, Payload& out) {
    auto segments = out.segments();
    return store.get(key, std::span<const std::span<std::byte>>(segments));
}

Status put(KvDiskStore& store, const KvBlockKey& key, const Payload& payload) {
    auto segments = payload.segments();
    return store.put(key, std::span<const std::span<const std::byte>>(segments));
}

TEST(KvDiskStore, RoundTripIsBitIdentical) {
    auto store = open_store(make_temp_dir("kv_store_round_trip"));
    const Payload written(kSizes, 1);
    const KvBlockKey key{0x1234, 0xabcdef};
    EXPECT_FALSE(store->contains(key));
    ASSERT_TRUE(put(*store, key, written).ok());
    EXPECT_TRUE(store->contains(key));
    Payload read(kSizes, 2);
    ASSERT_TRUE(get_block(*store, key, read));
    EXPECT_EQ(read.parts, written.parts);
    const KvBlockStoreStats stats = store->stats();
    EXPECT_EQ(stats.hits, 1);
    EXPECT_EQ(stats.puts, 1);
    EXPECT_EQ(stats.bytes_read, written.bytes());
    EXPECT_EQ(stats.bytes_written, written.bytes());
    EXPECT_EQ(store->used_bytes(), KvDiskStore::kHeaderBytes + written.bytes());
}

TEST(KvDiskStore, AnotherProcessOrRestartFindsTheBlock) {
    const std::string dir = make_temp_dir("kv_store_shared");
    const Payload written(kSizes, 3);
    ASSERT_TRUE(put(*open_store(dir), {7, 8}, written).ok());
    auto other = open_store(dir);  // a second replica, or the same server restarted
    Payload read(kSizes, 4);
    ASSERT_TRUE(get_block(*other, {7, 8}, read));
    EXPECT_EQ(read.parts, written.parts);
}

TEST(KvDiskStore, WrongKeyModelOrSizeIsAMiss) {
    auto store = open_store(make_temp_dir("kv_store_wrong_key"));
    ASSERT_TRUE(put(*store, {1, 2}, Payload(kSizes, 5)).ok());
    Payload read(kSizes, 6);
    EXPECT_FALSE(get_block(*store, {1, 3}, read));  // another block
    EXPECT_FALSE(get_block(*store, {9, 2}, read));  // another model identity
    Payload longer({64, 1000, 3, 4097}, 6);
    EXPECT_FALSE(get_block(*store, {1, 2}, longer));  // another shape
    EXPECT_EQ(store->stats().misses, 3);
    EXPECT_EQ(store->stats().hits, 0);
}

TEST(KvDiskStore, FileRenamedUnderAnotherKeyIsAMiss) {
    const std::string dir = make_temp_dir("kv_store_renamed");
    auto store = open_store(dir);
    ASSERT_TRUE(put(*store, {1, 2}, Payload(kSizes, 5)).ok());
    auto files = kv_block_files(dir);
    ASSERT_EQ(files.size(), 1u);
    // The header names the key: a file copied to another key's name does not pass for it.
    fs::rename(files[0], fs::path(dir) / "0000000000000001-0000000000000005.kvb");
    Payload read(kSizes, 6);
    EXPECT_FALSE(get_block(*store, {1, 5}, read));
    EXPECT_EQ(store->stats().corrupt, 1);
}

// Damages the only block file of `dir` with `damage`, then expects a miss that deletes it.
template <typename Damage>
void expect_damage_is_a_miss(const std::string& name, Damage damage) {
    const std::string dir = make_temp_dir(name);
    auto store = open_store(dir);
    const KvBlockKey key{11, 22};
    ASSERT_TRUE(put(*store, key, Payload(kSizes, 7)).ok());
    auto files = kv_block_files(dir);
    ASSERT_EQ(files.size(), 1u);
    damage(files[0]);
    Payload read(kSizes, 8);
    EXPECT_FALSE(get_block(*store, key, read)) << name;
    EXPECT_EQ(store->stats().corrupt, 1) << name;
    EXPECT_TRUE(kv_block_files(dir).empty()) << name << ": the damaged file stays";
    // The next put stores it again.
    ASSERT_TRUE(put(*store, key, Payload(kSizes, 7)).ok());
    EXPECT_TRUE(get_block(*store, key, read));
}

void flip_byte(const fs::path& path, int64_t offset) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(offset);
    char c = 0;
    file.get(c);
    file.seekp(offset);
    file.put(char(c ^ 0x40));
}

TEST(KvDiskStore, CorruptedPayloadIsAMiss) {
    expect_damage_is_a_miss("kv_store_corrupt_payload",
                            [](const fs::path& path) { flip_byte(path, KvDiskStore::kHeaderBytes + 500); });
}

TEST(KvDiskStore, CorruptedHeaderIsAMiss) {
    expect_damage_is_a_miss("kv_store_corrupt_header", [](const fs::path& path) { flip_byte(path, 9); });
}

TEST(KvDiskStore, TruncatedFileIsAMiss) {
    expect_damage_is_a_miss("kv_store_truncated",
                            [](const fs::path& path) { fs::resize_file(path, fs::file_size(path) - 1); });
}

TEST(KvDiskStore, TornWriteWithRightLengthIsAMiss) {
    // A crash that left the right length but zeros past some point (pages never written).
    expect_damage_is_a_miss("kv_store_torn", [](const fs::path& path) {
        const auto size = fs::file_size(path);
        fs::resize_file(path, 2000);
        fs::resize_file(path, size);
    });
}

TEST(KvDiskStore, SizeBoundHoldsWhenWritingTenTimesIt) {
    const std::string dir = make_temp_dir("kv_store_bound");
    const Payload payload(kSizes, 9);
    const int64_t file_bytes = KvDiskStore::kHeaderBytes + payload.bytes();
    const int64_t capacity = 10 * file_bytes + file_bytes / 2;
    auto store = open_store(dir, capacity);
    for (uint64_t i = 0; i < 100; ++i) {  // 10x the bound
        ASSERT_TRUE(put(*store, {1, i}, payload).ok());
        ASSERT_LE(store->used_bytes(), capacity) << "after block " << i;
    }
    EXPECT_EQ(int64_t(kv_block_files(dir).size()), 10);
    EXPECT_EQ(store->stats().evictions, 90);
    Payload read(kSizes, 10);
    EXPECT_TRUE(get_block(*store, {1, 99}, read));  // the newest stays
    EXPECT_FALSE(store->contains({1, 0}));          // the oldest went
}

TEST(KvDiskStore, BoundIsSharedByProcessesOnTheDirectory) {
    const std::string dir = make_temp_dir("kv_store_bound_shared");
    const Payload payload(kSizes, 9);
    const int64_t capacity = 5 * (KvDiskStore::kHeaderBytes + payload.bytes());
    auto first = open_store(dir, capacity), second = open_store(dir, capacity);
    for (uint64_t i = 0; i < 40; ++i) {
        ASSERT_TRUE(put(i % 2 ? *first : *second, {1, i}, payload).ok());
        ASSERT_LE(first->used_bytes(), capacity);
    }
}

TEST(KvDiskStore, LeastRecentlyUsedBlockIsEvictedFirst) {
    const std::string dir = make_temp_dir("kv_store_lru");
    const Payload payload(kSizes, 12);
    auto store = open_store(dir, 3 * (KvDiskStore::kHeaderBytes + payload.bytes()));
    // The store stamps files with the precise time; a little apart in case the clock is coarse.
    auto tick = [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
    for (uint64_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(put(*store, {1, i}, payload).ok());
        tick();
    }
    Payload read(kSizes, 13);
    ASSERT_TRUE(get_block(*store, {1, 0}, read));  // block 0 is now the most recently used
    tick();
    ASSERT_TRUE(put(*store, {1, 3}, payload).ok());
    EXPECT_TRUE(store->contains({1, 0}));
    EXPECT_FALSE(store->contains({1, 1}));
    EXPECT_TRUE(store->contains({1, 2}));
    EXPECT_TRUE(store->contains({1, 3}));
}

TEST(KvDiskStore, LeftoverTemporaryFilesAreRemovedByTheNextPut) {
    const std::string dir = make_temp_dir("kv_store_leftover");
    {
        std::ofstream leftover(fs::path(dir) / "999-0.kvtmp", std::ios::binary);
        leftover << std::string(5000, 'x');  // a writer that died mid-block
    }
    const Payload payload(kSizes, 14);
    const int64_t file_bytes = KvDiskStore::kHeaderBytes + payload.bytes();
    auto store = open_store(dir, file_bytes + 100);
    EXPECT_GT(store->used_bytes(), 5000 - 1);  // counted in the bound
    ASSERT_TRUE(put(*store, {1, 1}, payload).ok());
    EXPECT_FALSE(fs::exists(fs::path(dir) / "999-0.kvtmp"));
    EXPECT_EQ(store->used_bytes(), file_bytes);
}

TEST(KvDiskStore, BlockLargerThanTheBoundIsRefused) {
    auto store = open_store(make_temp_dir("kv_store_too_large"), 1000);
    Status status = put(*store, {1, 1}, Payload(kSizes, 15));
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().kind, ErrorKind::ResourceExhausted);
    EXPECT_EQ(store->used_bytes(), 0);
}

TEST(KvDiskStore, BadDirectoryIsAnErrorNamingIt) {
    const std::string dir = make_temp_dir("kv_store_bad_dir");
    const std::string file = dir + "/plain_file";
    std::ofstream(file) << "x";
    for (const std::string& bad : {file, dir + "/missing/parent", std::string()}) {
        auto store = KvDiskStore::open(bad, 1 << 20);
        ASSERT_FALSE(store.ok()) << bad;
        EXPECT_EQ(store.error().kind, ErrorKind::InvalidArgument);
        EXPECT_NE(store.error().message.find("--kv-offload-dir " + bad), std::string::npos)
            << store.error().message;
    }
    EXPECT_TRUE(KvDiskStore::open(dir + "/created", 1 << 20).ok());  // a missing last component is made
    EXPECT_TRUE(fs::is_directory(dir + "/created"));
}

// Random bytes, random lengths and damaged copies of real blocks under real block names:
// every get is a miss or an exact block, never a crash.
TEST(KvDiskStore, RandomFilesNeverCrashAndAreMisses) {
    const std::string dir = make_temp_dir("kv_store_fuzz");
    auto store = open_store(dir);
    const Payload valid(kSizes, 16);
    const int64_t file_bytes = KvDiskStore::kHeaderBytes + valid.bytes();
    ASSERT_TRUE(put(*store, {5, 0}, valid).ok());
    std::string valid_bytes;
    {
        std::ifstream in(kv_block_files(dir)[0], std::ios::binary);
        valid_bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_EQ(int64_t(valid_bytes.size()), file_bytes);
    std::mt19937 rng(17);
    int num_hits = 0;
    for (uint64_t i = 1; i <= 300; ++i) {
        std::string bytes;
        switch (i % 3) {
            case 0:  // noise of a random length, sometimes exactly a block's
                bytes.resize(rng() % 2 ? size_t(file_bytes) : size_t(rng() % (2 * file_bytes)));
                for (char& c : bytes) c = char(rng());
                break;
            case 1:  // a real block with a few bytes changed
                bytes = valid_bytes;
                for (int flips = 1 + int(rng() % 4); flips > 0; --flips)
                    bytes[rng() % bytes.size()] ^= char(1 + rng() % 255);
                break;
            default:  // a real block cut short
                bytes = valid_bytes.substr(0, rng() % valid_bytes.size());
        }
        const std::string name = fmt::format("{}/{:016x}-{:016x}.kvb", dir, 5, i);
        std::ofstream(name, std::ios::binary) << bytes;
        Payload read(kSizes, 18);
        const bool hit = get_block(*store, {5, i}, read);
        num_hits += hit;
        if (hit) {
            EXPECT_EQ(read.parts, valid.parts);
        }  // only possible if the damage undid itself
    }
    EXPECT_EQ(num_hits, 0);
    // Garbage under other names (and directories) does not disturb puts or the bound.
    fs::create_directories(fs::path(dir) / "sub.kvb");
    std::ofstream(fs::path(dir) / "notes.txt") << "hello";
    ASSERT_TRUE(put(*store, {5, 1000}, valid).ok());
    Payload read(kSizes, 19);
    EXPECT_TRUE(get_block(*store, {5, 1000}, read));
    EXPECT_EQ(read.parts, valid.parts);
}

}  // namespace
}  // namespace lmrun
