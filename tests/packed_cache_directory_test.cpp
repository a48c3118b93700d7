// The packed cache directory as lmrun keeps it by default: where it is (LMRUN_CACHE_DIR,
// XDG_CACHE_HOME, HOME), what `--packed-cache none` means, and its upkeep before a write: dead
// temporary files and files of deleted model folders go, then the least recently used until the
// new file fits the bound; a file over the bound is not written, and a file another process
// wrote meanwhile is not written again. A model loaded with a cache directory writes its file in
// the background and maps it on the next load.
#include "model/packed_cache_directory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "model/causal_lm.h"
#include "model/config.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for the scope, restoring what was there.
class ScopedEnvironment {
  public:
    ScopedEnvironment(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }
    ~ScopedEnvironment() {
        if (old_) {
            setenv(name_, old_->c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }
    ScopedEnvironment(const ScopedEnvironment&) = delete;
    ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

  private:
    const char* name_;
    std::optional<std::string> old_;
};

TEST(PackedCacheDirectory, DefaultFollowsTheEnvironment) {
    ScopedEnvironment lmrun_dir("LMRUN_CACHE_DIR", "/srv/lmrun-cache");
    ScopedEnvironment xdg("XDG_CACHE_HOME", "/xdg");
    ScopedEnvironment home("HOME", "/home/user");
    EXPECT_EQ(default_packed_cache_dir(), "/srv/lmrun-cache/packed");
    {
        ScopedEnvironment unset("LMRUN_CACHE_DIR", nullptr);
        EXPECT_EQ(default_packed_cache_dir(), "/xdg/lmrun/packed");
        ScopedEnvironment unset_xdg("XDG_CACHE_HOME", nullptr);
        EXPECT_EQ(default_packed_cache_dir(), "/home/user/.cache/lmrun/packed");
        ScopedEnvironment unset_home("HOME", nullptr);
        EXPECT_EQ(default_packed_cache_dir(), "");
        EXPECT_EQ(packed_cache_dir_from_option(""), "");  // no default without a home: no cache
    }
    EXPECT_EQ(packed_cache_dir_from_option(""), "/srv/lmrun-cache/packed");
    EXPECT_EQ(packed_cache_dir_from_option("none"), "");
    EXPECT_EQ(packed_cache_dir_from_option("/data/packed"), "/data/packed");
}

// One small packed weight: what the files below hold (their sizes are what the bound counts).
kernels::LinearWeight small_weight(int64_t out_features) {
    std::vector<float> values(size_t(out_features * 64), 0.5f);
    return kernels::LinearWeight::pack(values.data(), DType::F32, out_features, 64, DType::BF16);
}

// A model folder (it exists while it holds a config.json) and a key naming it.
PackedCacheKey key_for_folder(const std::string& cache_dir, const std::string& folder,
                              const std::string& name) {
    fs::create_directories(folder);
    std::ofstream(folder + "/config.json") << "{}";
    return {cache_dir + "/" + name + ".lmpack", "test weights\nmodel folder " + folder + "\n"};
}

void set_used(const std::string& path, int seconds_ago) {
    fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
}

ino_t inode_of(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
    return info.st_ino;
}

TEST(PackedCacheDirectory, UpkeepRemovesDeadFilesThenTheLeastRecentlyUsed) {
    const std::string root = make_temp_dir("packed_cache_upkeep");
    const std::string cache = root + "/cache";
    const kernels::LinearWeight weight = small_weight(64);
    const std::vector<const kernels::LinearWeight*> weights{&weight};
    const PackedCacheKey old_key = key_for_folder(cache, root + "/old", "old");
    const PackedCacheKey recent_key = key_for_folder(cache, root + "/recent", "recent");
    const PackedCacheKey gone_key = key_for_folder(cache, root + "/gone", "gone");
    const PackedCacheKey new_key = key_for_folder(cache, root + "/new", "new");
    const int64_t file_bytes = int64_t(packed_cache_file_bytes(new_key, weights));
    PackedCacheOptions options{cache, 3 * file_bytes + file_bytes / 2};  // room for three files
    for (const PackedCacheKey* key : {&old_key, &recent_key, &gone_key}) {
        auto stored = store_packed_cache(options, *key, weights);
        ASSERT_TRUE(stored.ok()) << stored.error().message;
        EXPECT_TRUE(stored.value());
    }
    set_used(old_key.path, 300);
    set_used(gone_key.path, 200);
    set_used(recent_key.path, 100);
    std::ofstream(cache + "/old.lmpack.4242.tmp") << "a writer that died";
    fs::remove_all(root + "/gone");

    // Three files fit: the dead one makes room, the least recently used stays.
    auto stored = store_packed_cache(options, new_key, weights);
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    EXPECT_TRUE(stored.value());
    EXPECT_FALSE(fs::exists(gone_key.path));
    EXPECT_FALSE(fs::exists(cache + "/old.lmpack.4242.tmp"));
    EXPECT_TRUE(fs::exists(old_key.path));
    EXPECT_TRUE(fs::exists(recent_key.path));
    EXPECT_TRUE(fs::exists(new_key.path));

    // Room for two with the new one: the two least recently used go.
    options.max_bytes = 2 * file_bytes + file_bytes / 2;
    const PackedCacheKey newest_key = key_for_folder(cache, root + "/newest", "newest");
    set_used(new_key.path, 50);
    stored = store_packed_cache(options, newest_key, weights);
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    EXPECT_FALSE(fs::exists(old_key.path));
    EXPECT_FALSE(fs::exists(recent_key.path));
    EXPECT_TRUE(fs::exists(new_key.path));
    EXPECT_TRUE(fs::exists(newest_key.path));
    int64_t total = 0;
    for (const auto& entry : fs::directory_iterator(cache))
        if (entry.path().extension() == ".lmpack") total += int64_t(entry.file_size());
    EXPECT_LE(total, options.max_bytes);
}

TEST(PackedCacheDirectory, OverTheBoundOrWrittenMeanwhileIsNotWritten) {
    const std::string root = make_temp_dir("packed_cache_skip");
    const std::string cache = root + "/cache";
    const kernels::LinearWeight weight = small_weight(256);
    const std::vector<const kernels::LinearWeight*> weights{&weight};
    const PackedCacheKey key = key_for_folder(cache, root + "/model", "model");
    const int64_t file_bytes = int64_t(packed_cache_file_bytes(key, weights));

    auto stored = store_packed_cache({cache, file_bytes - 1}, key, weights);
    ASSERT_TRUE(stored.ok()) << stored.error().message;
    EXPECT_FALSE(stored.value());
    EXPECT_FALSE(fs::exists(key.path));

    stored = store_packed_cache({cache, file_bytes}, key, weights);
    ASSERT_TRUE(stored.ok() && stored.value());
    EXPECT_EQ(int64_t(fs::file_size(key.path)), file_bytes);
    const ino_t written = inode_of(key.path);
    stored = store_packed_cache({cache, file_bytes}, key, weights);  // another replica, later
    ASSERT_TRUE(stored.ok());
    EXPECT_FALSE(stored.value());
    EXPECT_EQ(inode_of(key.path), written);

    // The same name made from something else (a changed checkpoint) is replaced.
    const PackedCacheKey changed{key.path, key.identity + "changed\n"};
    stored = store_packed_cache({cache, file_bytes + 4096}, changed, weights);
    ASSERT_TRUE(stored.ok() && stored.value());
    auto identity = read_packed_cache_identity(key.path);
    ASSERT_TRUE(identity.ok());
    EXPECT_EQ(identity.value(), changed.identity);
    EXPECT_EQ(packed_cache_model_folder(identity.value()), root + "/model");
}

TEST(PackedCacheDirectory, ModelWritesItsFileInTheBackgroundAndMapsItNextTime) {
    const std::string cache = make_temp_dir("packed_cache_background") + "/cache";
    const std::string model_dir = testdata_path("qwen3-tiny");
    auto config = load_model_config(model_dir);
    ASSERT_TRUE(config.ok());
    auto first = CausalLM::load(model_dir, config.value(), DType::BF16, {}, {}, {cache});
    ASSERT_TRUE(first.ok()) << first.error().message;
    first.value()->finish_packed_cache_write();
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(cache))
        if (entry.path().extension() == ".lmpack") files.push_back(entry.path().string());
    ASSERT_EQ(files.size(), 1u);
    const ino_t written = inode_of(files[0]);
    set_used(files[0], 60);
    const auto before = fs::last_write_time(files[0]);
    auto second = CausalLM::load(model_dir, config.value(), DType::BF16, {}, {}, {cache});
    ASSERT_TRUE(second.ok()) << second.error().message;
    second.value()->finish_packed_cache_write();       // nothing to write: returns at once
    EXPECT_EQ(inode_of(files[0]), written);            // mapped, not written again
    EXPECT_GT(fs::last_write_time(files[0]), before);  // and marked used
}

}  // namespace
}  // namespace lmrun::testing
