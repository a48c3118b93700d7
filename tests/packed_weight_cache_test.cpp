// The packed weight cache (--packed-cache): a file written from packed weights reads back byte
// for byte; a file made for another identity or other shapes, truncated, with a damaged header
// or a flipped weight byte is a Corrupt error naming the file; a model loaded through the cache
// (written, then mapped) produces the goldens, and a stale or damaged file is rebuilt.
#include "model/packed_weight_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "kernels/linear_gemv.h"
#include "model/causal_lm.h"
#include "runner_test_util.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

namespace fs = std::filesystem;

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(size_t(rows * cols));
    for (float& value : values) value = uniform(random);
    return values;
}

// Three weights of every storage dtype, with odd shapes (a partial tile, padded k).
std::vector<kernels::LinearWeight> sample_weights() {
    std::vector<kernels::LinearWeight> weights;
    const auto a = random_matrix(70, 33, 1), b = random_matrix(130, 64, 2), c = random_matrix(64, 100, 3);
    weights.push_back(kernels::LinearWeight::pack(a.data(), DType::F32, 70, 33, DType::BF16));
    weights.push_back(kernels::LinearWeight::pack(b.data(), DType::F32, 130, 64, DType::F32));
    weights.push_back(kernels::LinearWeight::pack(c.data(), DType::F32, 64, 100, DType::I8));
    return weights;
}

std::vector<PackedWeightShape> shapes_of(const std::vector<kernels::LinearWeight>& weights) {
    std::vector<PackedWeightShape> shapes;
    for (const auto& weight : weights)
        shapes.push_back({weight.out_features(), weight.in_features(), weight.storage_dtype()});
    return shapes;
}

std::vector<const kernels::LinearWeight*> pointers(const std::vector<kernels::LinearWeight>& weights) {
    std::vector<const kernels::LinearWeight*> result;
    for (const auto& weight : weights) result.push_back(&weight);
    return result;
}

void expect_same_bytes(const kernels::LinearWeight& a, const kernels::LinearWeight& b) {
    const kernels::PackedLinear &x = a.packed(), &y = b.packed();
    ASSERT_EQ(x.dtype, y.dtype);
    ASSERT_EQ(x.num_tiles, y.num_tiles);
    ASSERT_EQ(x.padded_in, y.padded_in);
    const size_t bytes = kernels::LinearWeight::packed_nbytes(x.out_features, x.in_features, x.dtype);
    EXPECT_EQ(std::memcmp(x.data, y.data, bytes), 0);
    EXPECT_NE(x.data, y.data);  // b reads the file's mapping, not a's memory
    if (x.dtype == DType::I8) {
        const size_t outputs = size_t(x.num_tiles * kernels::kTileOutputs);
        EXPECT_EQ(std::memcmp(x.scales, y.scales, outputs * sizeof(float)), 0);
        EXPECT_EQ(std::memcmp(x.compensation, y.compensation, outputs * sizeof(int32_t)), 0);
    }
}

void expect_corrupt(const Result<std::vector<kernels::LinearWeight>>& read, const std::string& path,
                    const std::string& what) {
    ASSERT_FALSE(read.ok()) << what;
    EXPECT_EQ(read.error().kind, ErrorKind::Corrupt) << read.error().message;
    EXPECT_NE(read.error().message.find(path), std::string::npos) << read.error().message;
    EXPECT_NE(read.error().message.find(what), std::string::npos) << read.error().message;
}

void flip_byte(const std::string& path, uint64_t offset) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(std::streamoff(offset));
    char byte = 0;
    file.read(&byte, 1);
    byte = char(byte ^ 0x40);
    file.seekp(std::streamoff(offset));
    file.write(&byte, 1);
}

TEST(PackedWeightCache, ReadsBackWhatWasWrittenByteForByte) {
    const std::string dir = make_temp_dir("packed_cache_roundtrip");
    const PackedCacheKey key{dir + "/weights.lmpack", "identity A\n"};
    const auto weights = sample_weights();
    ASSERT_TRUE(write_packed_cache(key, pointers(weights)).ok());
    auto read = read_packed_cache(key, shapes_of(weights));
    ASSERT_TRUE(read.ok()) << read.error().message;
    ASSERT_EQ(read.value().size(), weights.size());
    for (size_t i = 0; i < weights.size(); ++i) expect_same_bytes(weights[i], read.value()[i]);
    // The weights keep the mapping alive on their own.
    auto kept = read.value()[0];
    read = Result<std::vector<kernels::LinearWeight>>(std::vector<kernels::LinearWeight>{});
    expect_same_bytes(weights[0], kept);
}

TEST(PackedWeightCache, MissingFileIsNotFound) {
    const std::string dir = make_temp_dir("packed_cache_missing");
    auto read = read_packed_cache({dir + "/absent.lmpack", "x"}, shapes_of(sample_weights()));
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind, ErrorKind::NotFound);
}

TEST(PackedWeightCache, AnotherIdentityOrOtherShapesAreRejected) {
    const std::string dir = make_temp_dir("packed_cache_mismatch");
    const PackedCacheKey key{dir + "/weights.lmpack", "identity A\n"};
    const auto weights = sample_weights();
    ASSERT_TRUE(write_packed_cache(key, pointers(weights)).ok());
    expect_corrupt(read_packed_cache({key.path, "identity B\n"}, shapes_of(weights)), key.path,
                   "made from another checkpoint");
    auto shapes = shapes_of(weights);
    shapes[1].in_features += 1;
    expect_corrupt(read_packed_cache(key, shapes), key.path, "weight 1 does not have the shape");
    shapes = shapes_of(weights);
    shapes[2].storage_dtype = DType::BF16;
    expect_corrupt(read_packed_cache(key, shapes), key.path, "weight 2 does not have the shape");
    shapes = shapes_of(weights);
    shapes.pop_back();
    expect_corrupt(read_packed_cache(key, shapes), key.path, "another number of weights");
}

TEST(PackedWeightCache, DamagedFilesAreRejected) {
    const std::string dir = make_temp_dir("packed_cache_damaged");
    const PackedCacheKey key{dir + "/weights.lmpack", "identity A\n"};
    const auto weights = sample_weights();
    const auto shapes = shapes_of(weights);
    ASSERT_TRUE(write_packed_cache(key, pointers(weights)).ok());
    const uint64_t size = fs::file_size(key.path);

    flip_byte(key.path, size - 1);  // the last weight's compensations
    expect_corrupt(read_packed_cache(key, shapes), key.path, "the bytes of weight 2 fail their checksum");
    flip_byte(key.path, size - 1);
    ASSERT_TRUE(read_packed_cache(key, shapes).ok());

    flip_byte(key.path, 64);  // the first entry
    expect_corrupt(read_packed_cache(key, shapes), key.path, "header is damaged");
    flip_byte(key.path, 64);

    flip_byte(key.path, 0);  // the magic
    expect_corrupt(read_packed_cache(key, shapes), key.path, "not an lmrun packed weight file");
    flip_byte(key.path, 0);

    fs::resize_file(key.path, size - 4096);
    expect_corrupt(read_packed_cache(key, shapes), key.path, "truncated");
    fs::resize_file(key.path, 10);
    expect_corrupt(read_packed_cache(key, shapes), key.path, "not an lmrun packed weight file");
    fs::resize_file(key.path, 0);
    expect_corrupt(read_packed_cache(key, shapes), key.path, "not an lmrun packed weight file");
}

// A private copy of a test model, whose files a test may touch.
std::string copy_model(const std::string& model, const std::string& name) {
    const std::string dir = make_temp_dir(name) + "/" + model;
    fs::create_directories(dir);
    for (const char* file : {"config.json", "model.safetensors"})
        fs::copy_file(testdata_path(model + "/" + file), dir + "/" + file,
                      fs::copy_options::overwrite_existing);
    return dir;
}

// The packed weight files in cache_dir (not its lock file).
std::vector<std::string> cache_files(const std::string& cache_dir) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(cache_dir))
        if (entry.path().extension() == ".lmpack") files.push_back(entry.path().string());
    return files;
}

// A file written again (through a temporary file renamed into place) is a new inode; a file
// that is only used has its modification time stamped, so the time cannot tell.
ino_t inode_of_file(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
    return info.st_ino;
}

std::vector<std::vector<int32_t>> greedy(const std::string& model_dir, const std::string& cache_dir,
                                         const WeightQuantization& quantization = {}) {
    auto runner = make_runner(model_dir, DType::BF16, batch_config(256), quantization, {cache_dir});
    return run_greedy(*runner, qwen_requests(load_cases("qwen3-tiny")));
}

TEST(PackedWeightCacheModel, WrittenThenMappedWithTheSameOutputs) {
    const std::string model = copy_model("qwen3-tiny", "packed_cache_model");
    const std::string cache_dir = fs::path(model).parent_path().string() + "/cache";
    for (const WeightQuantization& quantization : {WeightQuantization{}, WeightQuantization{true, true}}) {
        fs::remove_all(cache_dir);
        const auto expected = greedy(model, "", quantization);
        EXPECT_EQ(greedy(model, cache_dir, quantization), expected);  // packs, writes the file
        const auto files = cache_files(cache_dir);
        ASSERT_EQ(files.size(), 1u);
        const ino_t written = inode_of_file(files[0]);
        EXPECT_EQ(greedy(model, cache_dir, quantization), expected);  // maps it
        EXPECT_EQ(cache_files(cache_dir), files);
        EXPECT_EQ(inode_of_file(files[0]), written);  // a hit does not rewrite it
    }
}

TEST(PackedWeightCacheModel, StaleOrDamagedFileIsRebuilt) {
    const std::string model = copy_model("qwen3-tiny", "packed_cache_rebuild");
    const std::string cache_dir = fs::path(model).parent_path().string() + "/cache";
    const auto expected = greedy(model, "");
    EXPECT_EQ(greedy(model, cache_dir), expected);
    const std::string file = cache_files(cache_dir).at(0);

    // The checkpoint changes (its modification time): the file is stale, rebuilt in place.
    fs::last_write_time(model + "/model.safetensors",
                        fs::last_write_time(model + "/model.safetensors") + std::chrono::seconds(5));
    auto checkpoint = Checkpoint::open(model);
    ASSERT_TRUE(checkpoint.ok());
    auto key = packed_cache_key(cache_dir, checkpoint.value(), DType::BF16, {}, 0, 1);
    ASSERT_TRUE(key.ok());
    EXPECT_EQ(key.value().path, file);
    std::vector<PackedWeightShape> no_shapes;
    expect_corrupt(read_packed_cache(key.value(), no_shapes), file, "made from another checkpoint");
    EXPECT_EQ(greedy(model, cache_dir), expected);
    EXPECT_EQ(cache_files(cache_dir), std::vector<std::string>{file});
    auto entries_only = read_packed_cache(key.value(), no_shapes);  // identity matches again
    expect_corrupt(entries_only, file, "another number of weights");

    // A damaged weight: rebuilt too, the outputs unchanged.
    flip_byte(file, fs::file_size(file) - 100);
    EXPECT_EQ(greedy(model, cache_dir), expected);
    const ino_t rewritten = inode_of_file(file);
    EXPECT_EQ(greedy(model, cache_dir), expected);
    EXPECT_EQ(inode_of_file(file), rewritten);  // the rebuilt file is used as is
}

}  // namespace
}  // namespace lmrun::testing
