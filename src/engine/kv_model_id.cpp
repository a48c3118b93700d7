#include "engine/kv_model_id.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <vector>

#include <xxhash.h>

namespace lmrun {

namespace {

constexpr uint64_t kFormatVersion = 1;
constexpr int64_t kSampleBytes = 4096;
constexpr int64_t kNumSamples = 16;

uint64_t mix(uint64_t hash, const void* data, size_t size) {
    return XXH64(data, size, hash);
}

template <typename T>
uint64_t mix_value(uint64_t hash, T value) {
    return mix(hash, &value, sizeof(value));
}

// The file's bytes when it is small (config.json), else 16 evenly spaced pieces.
uint64_t mix_file(uint64_t hash, const std::filesystem::path& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mix_value(hash, uint64_t(0));
    struct stat st {};
    const int64_t size = fstat(fd, &st) == 0 ? int64_t(st.st_size) : 0;
    hash = mix(hash, path.filename().c_str(), path.filename().native().size());
    hash = mix_value(hash, size);
    std::array<char, kSampleBytes> buffer{};
    const int64_t stride = std::max<int64_t>(size / kNumSamples, 1);
    for (int64_t offset = 0; offset < size; offset += std::max(stride, kSampleBytes)) {
        const ssize_t got = pread(fd, buffer.data(), buffer.size(), offset);
        if (got <= 0) break;
        hash = mix(hash, buffer.data(), size_t(got));
    }
    close(fd);
    return hash;
}

}  // namespace

uint64_t kv_model_id(const std::string& model_dir, DType weight_dtype, const KvCacheShape& kv_shape,
                     int tp_rank, int tp_size) {
    uint64_t hash = mix_value(0, kFormatVersion);
    const std::filesystem::path dir(model_dir);
    hash = mix_file(hash, dir / "config.json");
    std::vector<std::filesystem::path> weights;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
        if (entry.path().extension() == ".safetensors") weights.push_back(entry.path());
    }
    std::sort(weights.begin(), weights.end());
    for (const auto& path : weights) hash = mix_file(hash, path);
    hash = mix_value(hash, int32_t(weight_dtype));
    hash = mix_value(hash, int32_t(kv_shape.dtype));
    for (int64_t value : {kv_shape.num_layers, kv_shape.block_size, kv_shape.num_kv_heads, kv_shape.head_dim})
        hash = mix_value(hash, value);
    hash = mix_value(hash, int64_t(tp_rank));
    return mix_value(hash, int64_t(tp_size));
}

}  // namespace lmrun
