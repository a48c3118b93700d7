#include "model/packed_weight_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/file_times.h"
#include "core/parallel.h"
#include "kernels/linear_gemv.h"

namespace lmrun {
namespace {

constexpr char kMagic[8] = {'L', 'M', 'R', 'U', 'N', 'P', 'W', '1'};
constexpr uint64_t kRegionAlignment = uint64_t(2) << 20;  // each weight on its own 2 MiB boundary
constexpr uint64_t kMaxIdentityBytes = uint64_t(1) << 20;
constexpr uint64_t kMaxWeights = uint64_t(1) << 20;
// Bytes written between two calls of the pacing hook (about a millisecond of copying).
constexpr size_t kWritePieceBytes = size_t(4) << 20;
// The identity line naming the model folder the file was made from (the directory's upkeep
// removes files whose folder is gone).
constexpr char kModelFolderLine[] = "model folder ";

// The file: FileHeader, Entry[num_weights], the identity text, zero padding up to
// data_offset, then each weight's region (packed tiles, then for int8 the scales and
// compensations), every region starting on a kRegionAlignment boundary.
struct FileHeader {
    char magic[8];
    uint64_t num_weights;
    uint64_t identity_bytes;
    uint64_t data_offset;
    uint64_t file_bytes;
    uint64_t meta_checksum;  // XXH3 of the entries and the identity text
};

struct Entry {
    int64_t out_features;
    int64_t in_features;
    int64_t storage_dtype;  // DType
    uint64_t offset;        // of the region
    uint64_t bytes;         // of the region
    uint64_t checksum;      // XXH3 of the region
};

uint64_t round_up(uint64_t value, uint64_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

kernels::PackedLinear layout_of(const PackedWeightShape& shape) {
    return kernels::packed_layout(shape.out_features, shape.in_features, shape.storage_dtype);
}

// Tiles plus, for int8, a scale and a compensation per padded output.
uint64_t region_bytes(const PackedWeightShape& shape) {
    const kernels::PackedLinear layout = layout_of(shape);
    uint64_t bytes = layout.tiles_nbytes();
    if (shape.storage_dtype == DType::I8)
        bytes += layout.padded_outputs() * (sizeof(float) + sizeof(int32_t));
    return bytes;
}

uint64_t meta_checksum(const Entry* entries, uint64_t num_entries, const std::string& identity) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, entries, num_entries * sizeof(Entry));
    XXH3_64bits_update(state, identity.data(), identity.size());
    const uint64_t hash = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return hash;
}

Error corrupt(const std::string& path, const std::string& what) {
    return make_error_about(path, ErrorKind::Corrupt, "{}: {}", path, what);
}

// Hash of a safetensors file's header (its first 8 + N bytes), size and modification time.
Result<std::string> describe_source(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return make_error_about(path, ErrorKind::NotFound, "{}: cannot open: {}", path, std::strerror(errno));
    struct stat info {};
    uint64_t header_bytes = 0;
    std::string header;
    bool read_ok = fstat(fd, &info) == 0 && info.st_size >= 8 && pread(fd, &header_bytes, 8, 0) == 8 &&
                   header_bytes <= uint64_t(info.st_size) - 8;
    if (read_ok) {
        header.resize(size_t(header_bytes));
        read_ok = pread(fd, header.data(), header.size(), 8) == ssize_t(header.size());
    }
    ::close(fd);
    if (!read_ok) return corrupt(path, "cannot read its safetensors header");
    return fmt::format("file {}: {} bytes, modified {}.{:09d}, header xxh3 {:016x}\n",
                       std::filesystem::path(path).filename().string(), int64_t(info.st_size),
                       int64_t(info.st_mtim.tv_sec), int64_t(info.st_mtim.tv_nsec),
                       XXH3_64bits(header.data(), header.size()));
}

// The header, entries and identity text of an open cache file, checked for consistency (not
// yet against any model).
Status read_meta(int fd, const std::string& path, uint64_t file_bytes, std::vector<Entry>& entries,
                 std::string& identity, uint64_t& data_offset) {
    FileHeader header{};
    if (file_bytes < sizeof(header) || pread(fd, &header, sizeof(header), 0) != ssize_t(sizeof(header)) ||
        std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0)
        return corrupt(path, "not an lmrun packed weight file");
    if (header.file_bytes != file_bytes) return corrupt(path, "truncated (or extended) after it was written");
    if (header.num_weights > kMaxWeights || header.identity_bytes > kMaxIdentityBytes ||
        sizeof(header) + header.num_weights * sizeof(Entry) + header.identity_bytes > header.data_offset ||
        header.data_offset > file_bytes)
        return corrupt(path, "its header is damaged");
    entries.resize(size_t(header.num_weights));
    identity.assign(size_t(header.identity_bytes), '\0');
    const ssize_t entry_bytes = ssize_t(entries.size() * sizeof(Entry));
    if (pread(fd, entries.data(), size_t(entry_bytes), sizeof(header)) != entry_bytes ||
        pread(fd, identity.data(), identity.size(), off_t(sizeof(header) + size_t(entry_bytes))) !=
            ssize_t(identity.size()) ||
        meta_checksum(entries.data(), entries.size(), identity) != header.meta_checksum)
        return corrupt(path, "its header is damaged (checksum)");
    data_offset = header.data_offset;
    return ok_status();
}

// The header, entries and identity of an open cache file, checked against what this model needs.
Status check_meta(int fd, const std::string& path, uint64_t file_bytes, const PackedCacheKey& key,
                  const std::vector<PackedWeightShape>& shapes, std::vector<Entry>& entries) {
    std::string identity;
    uint64_t data_offset = 0;
    LMRUN_RETURN_IF_ERROR(read_meta(fd, path, file_bytes, entries, identity, data_offset));
    if (identity != key.identity)
        return corrupt(path, "made from another checkpoint or with other settings or layout");
    if (entries.size() != shapes.size()) return corrupt(path, "holds another number of weights");
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry& entry = entries[i];
        const PackedWeightShape& shape = shapes[i];
        if (entry.out_features != shape.out_features || entry.in_features != shape.in_features ||
            entry.storage_dtype != int64_t(shape.storage_dtype) || entry.bytes != region_bytes(shape) ||
            entry.offset % kRegionAlignment != 0 || entry.offset < data_offset || entry.offset > file_bytes ||
            entry.bytes > file_bytes - entry.offset)
            return corrupt(path, fmt::format("weight {} does not have the shape or place it should", i));
    }
    return ok_status();
}

struct Mapping {
    void* data = nullptr;
    size_t bytes = 0;
    ~Mapping() {
        if (data) munmap(data, bytes);
    }
};

// Every region's checksum, the regions spread over the threads (which also faults them in).
int64_t first_bad_region(const unsigned char* base, const std::vector<Entry>& entries) {
    std::atomic<int64_t> first_bad{int64_t(entries.size())};
    std::atomic<int64_t> next{0};
    parallel_for(num_threads(), [&](int64_t, int64_t) {
        for (int64_t i = next++; i < int64_t(entries.size()); i = next++) {
            const Entry& entry = entries[size_t(i)];
            if (XXH3_64bits(base + entry.offset, entry.bytes) != entry.checksum) {
                int64_t current = first_bad.load();
                while (i < current && !first_bad.compare_exchange_weak(current, i)) {
                }
            }
        }
    });
    return first_bad.load() == int64_t(entries.size()) ? -1 : first_bad.load();
}

// The header and entries (checksums not yet filled in) of a file holding `weights`.
FileHeader plan_file(const PackedCacheKey& key, const std::vector<const kernels::LinearWeight*>& weights,
                     std::vector<Entry>& entries) {
    entries.resize(weights.size());
    FileHeader header{};
    std::memcpy(header.magic, kMagic, sizeof(kMagic));
    header.num_weights = entries.size();
    header.identity_bytes = key.identity.size();
    header.data_offset =
        round_up(sizeof(header) + entries.size() * sizeof(Entry) + key.identity.size(), kRegionAlignment);
    uint64_t offset = header.data_offset;
    for (size_t i = 0; i < weights.size(); ++i) {
        const kernels::PackedLinear& packed = weights[i]->packed();
        const PackedWeightShape shape{packed.out_features, packed.in_features, packed.dtype};
        entries[i] = Entry{shape.out_features,           shape.in_features,
                           int64_t(shape.storage_dtype), offset,
                           region_bytes(shape),          0};
        offset = round_up(offset + entries[i].bytes, kRegionAlignment);
    }
    header.file_bytes = entries.empty() ? header.data_offset : entries.back().offset + entries.back().bytes;
    return header;
}

}  // namespace

Result<PackedCacheKey> packed_cache_key(const std::string& cache_dir, const Checkpoint& checkpoint,
                                        DType weight_dtype, const WeightQuantization& quantization,
                                        int tp_rank, int tp_size) {
    std::string identity = fmt::format(
        "lmrun packed weights, layout: {} outputs per tile, in padding F32 {} BF16 {} I8 {}\n"
        "weights {}, int8 at load {}, int8 embeddings {}, rank {} of {}\n",
        kernels::kTileOutputs, kernels::in_padding(DType::F32), kernels::in_padding(DType::BF16),
        kernels::in_padding(DType::I8), dtype_name(weight_dtype), quantization.int8_at_load ? 1 : 0,
        quantization.quantize_embeddings ? 1 : 0, tp_rank, tp_size);
    std::filesystem::path model_dir = std::filesystem::absolute(checkpoint.dir()).lexically_normal();
    if (!model_dir.has_filename()) model_dir = model_dir.parent_path();  // "DIR/" names DIR
    identity += fmt::format("{}{}\n", kModelFolderLine, model_dir.string());
    std::ifstream config_file(model_dir / "config.json", std::ios::binary);
    const std::string config_text((std::istreambuf_iterator<char>(config_file)),
                                  std::istreambuf_iterator<char>());
    identity +=
        fmt::format("config.json xxh3 {:016x}\n", XXH3_64bits(config_text.data(), config_text.size()));
    std::set<std::string> files;
    for (const std::string& name : checkpoint.tensor_names()) files.insert(checkpoint.find(name)->file_path);
    for (const std::string& file : files) {
        LMRUN_ASSIGN_OR_RETURN(std::string described, describe_source(file));
        identity += described;
    }
    // One file per model folder and settings, so a changed checkpoint replaces its stale file.
    const std::string slot =
        fmt::format("{}|{}|{}|{}|{}|{}", model_dir.string(), dtype_name(weight_dtype),
                    quantization.int8_at_load, quantization.quantize_embeddings, tp_rank, tp_size);
    const std::string file_name = fmt::format("{}-{:016x}.lmpack", model_dir.filename().string(),
                                              XXH3_64bits(slot.data(), slot.size()));
    return PackedCacheKey{(std::filesystem::path(cache_dir) / file_name).string(), std::move(identity)};
}

Result<std::vector<kernels::LinearWeight>> read_packed_cache(const PackedCacheKey& key,
                                                             const std::vector<PackedWeightShape>& shapes) {
    const std::string& path = key.path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error_about(path, ErrorKind::NotFound, "{}: no packed weight file", path);
    struct stat info {};
    std::vector<Entry> entries;
    Status meta = fstat(fd, &info) == 0 && S_ISREG(info.st_mode)
                      ? check_meta(fd, path, uint64_t(info.st_size), key, shapes, entries)
                      : Status(corrupt(path, "not a regular file"));
    auto mapping = std::make_shared<Mapping>();
    if (meta.ok()) {
        mapping->bytes = size_t(info.st_size);
        mapping->data = mmap(nullptr, mapping->bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
        if (mapping->data == MAP_FAILED) mapping->data = nullptr;
        if (mapping->data) mark_used_now(fd);  // recently used: the directory evicts it last
    }
    ::close(fd);
    if (!meta.ok()) return meta.error();
    if (!mapping->data) return corrupt(path, fmt::format("cannot be mapped: {}", std::strerror(errno)));
    const auto* base = static_cast<const unsigned char*>(mapping->data);
    const int64_t bad = first_bad_region(base, entries);
    if (bad >= 0) return corrupt(path, fmt::format("the bytes of weight {} fail their checksum", bad));
    std::vector<kernels::LinearWeight> weights;
    weights.reserve(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        const PackedWeightShape& shape = shapes[i];
        const kernels::PackedLinear layout = layout_of(shape);
        const unsigned char* tiles = base + entries[i].offset;
        const auto* scales = reinterpret_cast<const float*>(tiles + layout.tiles_nbytes());
        const auto* compensation = reinterpret_cast<const int32_t*>(scales + layout.padded_outputs());
        weights.push_back(kernels::LinearWeight::borrow_packed(
            tiles, mapping, shape.out_features, shape.in_features, shape.storage_dtype,
            shape.storage_dtype == DType::I8 ? scales : nullptr,
            shape.storage_dtype == DType::I8 ? compensation : nullptr));
    }
    return weights;
}

Status write_packed_cache(const PackedCacheKey& key, const std::vector<const kernels::LinearWeight*>& weights,
                          const std::function<void()>& before_each_piece) {
    const std::string& path = key.path;
    std::error_code error;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
    std::vector<Entry> entries;
    FileHeader header = plan_file(key, weights, entries);
    const std::string temporary = fmt::format("{}.{}.tmp", path, getpid());
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return make_error_about(path, ErrorKind::Unavailable, "{}: cannot create: {}", temporary,
                                std::strerror(errno));
    bool written = ftruncate(fd, off_t(header.file_bytes)) == 0;
    auto write_at = [&](const void* data, size_t bytes, uint64_t at) {
        const auto* from = static_cast<const unsigned char*>(data);
        while (written && bytes > 0) {
            const ssize_t count = pwrite(fd, from, bytes, off_t(at));
            written = count > 0;
            from += std::max<ssize_t>(count, 0), at += uint64_t(std::max<ssize_t>(count, 0));
            bytes -= size_t(std::max<ssize_t>(count, 0));
        }
    };
    for (size_t i = 0; i < weights.size() && written; ++i) {
        const kernels::PackedLinear& packed = weights[i]->packed();
        const size_t tile_bytes = packed.tiles_nbytes();
        XXH3_state_t* state = XXH3_createState();
        XXH3_64bits_reset(state);
        const auto* tiles = static_cast<const unsigned char*>(packed.data);
        for (size_t done = 0; done < tile_bytes && written; done += kWritePieceBytes) {
            if (before_each_piece) before_each_piece();
            const size_t piece = std::min(kWritePieceBytes, tile_bytes - done);
            XXH3_64bits_update(state, tiles + done, piece);
            write_at(tiles + done, piece, entries[i].offset + done);
        }
        if (packed.dtype == DType::I8) {
            const size_t outputs = packed.padded_outputs();
            XXH3_64bits_update(state, packed.scales, outputs * sizeof(float));
            XXH3_64bits_update(state, packed.compensation, outputs * sizeof(int32_t));
            write_at(packed.scales, outputs * sizeof(float), entries[i].offset + tile_bytes);
            write_at(packed.compensation, outputs * sizeof(int32_t),
                     entries[i].offset + tile_bytes + outputs * sizeof(float));
        }
        entries[i].checksum = XXH3_64bits_digest(state);
        XXH3_freeState(state);
    }
    header.meta_checksum = meta_checksum(entries.data(), entries.size(), key.identity);
    write_at(&header, sizeof(header), 0);
    write_at(entries.data(), entries.size() * sizeof(Entry), sizeof(header));
    write_at(key.identity.data(), key.identity.size(), sizeof(header) + entries.size() * sizeof(Entry));
    const int saved_errno = errno;
    written = (::close(fd) == 0) && written;
    if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
        std::filesystem::remove(temporary, error);
        return make_error_about(path, ErrorKind::Unavailable, "{}: cannot write: {}", path,
                                std::strerror(written ? errno : saved_errno));
    }
    return ok_status();
}

Result<std::string> read_packed_cache_identity(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error_about(path, ErrorKind::NotFound, "{}: no packed weight file", path);
    struct stat info {};
    std::vector<Entry> entries;
    std::string identity;
    uint64_t data_offset = 0;
    Status meta = fstat(fd, &info) == 0 && S_ISREG(info.st_mode)
                      ? read_meta(fd, path, uint64_t(info.st_size), entries, identity, data_offset)
                      : Status(corrupt(path, "not a regular file"));
    ::close(fd);
    if (!meta.ok()) return meta.error();
    return identity;
}

std::string packed_cache_model_folder(const std::string& identity) {
    const size_t start = identity.find(std::string("\n") + kModelFolderLine);
    if (start == std::string::npos) return "";
    const size_t folder = start + 1 + std::strlen(kModelFolderLine);
    return identity.substr(folder, identity.find('\n', folder) - folder);
}

uint64_t packed_cache_file_bytes(const PackedCacheKey& key,
                                 const std::vector<const kernels::LinearWeight*>& weights) {
    std::vector<Entry> entries;
    return plan_file(key, weights, entries).file_bytes;
}

}  // namespace lmrun
