#include "model/safetensors.h"

#include <nlohmann/json.hpp>

namespace lmrun {
namespace {

constexpr size_t kHeaderSizeBytes = 8;
constexpr std::string_view kSupportedDTypes = "F32, BF16, F16, I32, I64, I8, U8, F8_E4M3";

// Only the safetensors spellings; torch names ("float32") are not valid here.
std::optional<DType> parse_safetensors_dtype(std::string_view name) {
    for (DType dtype :
         {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64, DType::I8, DType::U8, DType::F8E4M3})
        if (dtype_name(dtype) == name) return dtype;
    return std::nullopt;
}

Result<std::vector<int64_t>> parse_shape(const nlohmann::json& entry, const std::string& where) {
    auto it = entry.find("shape");
    if (it == entry.end() || !it->is_array()) return make_error("{}: missing or non-list 'shape'", where);
    std::vector<int64_t> shape;
    for (const nlohmann::json& dim : *it) {
        if (!dim.is_number_integer() || dim.get<int64_t>() < 0 ||
            (dim.is_number_unsigned() && dim.get<uint64_t>() > uint64_t(INT64_MAX)))
            return make_error("{}: shape {} has a negative or non-integer dimension", where, it->dump());
        shape.push_back(dim.get<int64_t>());
    }
    return shape;
}

// Byte size of `shape` x `dtype`, or an error if it overflows 64 bits.
Result<uint64_t> shape_nbytes(const std::vector<int64_t>& shape, DType dtype, const std::string& where) {
    uint64_t total = dtype_size_bytes(dtype);
    for (int64_t dim : shape) {
        if (__builtin_mul_overflow(total, uint64_t(dim), &total))
            return make_error("{}: shape {} is too large", where, shape_to_string(shape));
    }
    return total;
}

Result<std::pair<uint64_t, uint64_t>> parse_offsets(const nlohmann::json& entry, const std::string& where) {
    auto it = entry.find("data_offsets");
    if (it == entry.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_unsigned() ||
        !(*it)[1].is_number_unsigned())
        return make_error("{}: 'data_offsets' must be two non-negative integers [begin, end]", where);
    uint64_t begin = (*it)[0].get<uint64_t>();
    uint64_t end = (*it)[1].get<uint64_t>();
    if (end < begin) return make_error("{}: data_offsets [{}, {}] end before they begin", where, begin, end);
    return std::make_pair(begin, end);
}

Status parse_metadata(const nlohmann::json& value, const std::string& path,
                      std::map<std::string, std::string>& metadata) {
    if (!value.is_object()) return make_error("{}: '__metadata__' must be an object of strings", path);
    for (auto it = value.begin(); it != value.end(); ++it) {
        if (!it.value().is_string())
            return make_error("{}: '__metadata__' value of '{}' must be a string", path, it.key());
        metadata[it.key()] = it.value().get<std::string>();
    }
    return ok_status();
}

}  // namespace

int64_t TensorInfo::numel() const {
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    return count;
}

std::string TensorInfo::shape_string() const {
    return shape_to_string(shape);
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
    SafetensorsFile file;
    LMRUN_ASSIGN_OR_RETURN(file.file_, MmapFile::open(path));
    LMRUN_RETURN_IF_ERROR(file.parse_header());
    return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    auto it = index_by_name_.find(name);
    return it == index_by_name_.end() ? nullptr : &tensors_[it->second];
}

Status SafetensorsFile::parse_header() {
    const std::string& file_path = file_->path();
    size_t file_bytes = file_->size_bytes();
    if (file_bytes < kHeaderSizeBytes)
        return make_error("{}: file is {} bytes, shorter than the 8-byte safetensors header size", file_path,
                          file_bytes);
    uint64_t header_bytes = 0;
    for (size_t i = 0; i < kHeaderSizeBytes; ++i) header_bytes |= uint64_t(file_->data()[i]) << (8 * i);
    if (header_bytes > file_bytes - kHeaderSizeBytes)
        return make_error(
            "{}: header size {} bytes goes beyond the end of the file ({} bytes); truncated or not "
            "a safetensors file",
            file_path, header_bytes, file_bytes);
    const char* header_begin = reinterpret_cast<const char*>(file_->data()) + kHeaderSizeBytes;
    nlohmann::json header = nlohmann::json::parse(header_begin, header_begin + header_bytes, nullptr,
                                                  /*allow_exceptions=*/false);
    if (header.is_discarded()) return make_error("{}: malformed JSON header", file_path);
    if (!header.is_object()) return make_error("{}: JSON header is not an object", file_path);

    const unsigned char* buffer = file_->data() + kHeaderSizeBytes + header_bytes;
    uint64_t buffer_bytes = file_bytes - kHeaderSizeBytes - header_bytes;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            LMRUN_RETURN_IF_ERROR(parse_metadata(it.value(), file_path, metadata_));
            continue;
        }
        std::string where = fmt::format("{}: tensor '{}'", file_path, it.key());
        const nlohmann::json& entry = it.value();
        if (!entry.is_object()) return make_error("{}: header entry is not an object", where);
        auto dtype_it = entry.find("dtype");
        if (dtype_it == entry.end() || !dtype_it->is_string())
            return make_error("{}: missing or non-string 'dtype'", where);
        std::optional<DType> dtype = parse_safetensors_dtype(dtype_it->get<std::string>());
        if (!dtype)
            return make_error("{}: unsupported dtype '{}' (supported: {})", where,
                              dtype_it->get<std::string>(), kSupportedDTypes);
        LMRUN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, parse_shape(entry, where));
        LMRUN_ASSIGN_OR_RETURN(uint64_t nbytes, shape_nbytes(shape, *dtype, where));
        LMRUN_ASSIGN_OR_RETURN(auto offsets, parse_offsets(entry, where));
        auto [begin, end] = offsets;
        if (end - begin != nbytes)
            return make_error("{}: data_offsets [{}, {}] span {} bytes but shape {} of {} needs {} bytes",
                              where, begin, end, end - begin, shape_to_string(shape), dtype_name(*dtype),
                              nbytes);
        // Overlapping or out-of-order tensors are tolerated; only the bounds matter for safety.
        if (end > buffer_bytes)
            return make_error("{}: data_offsets [{}, {}] go beyond the {}-byte data buffer (file truncated?)",
                              where, begin, end, buffer_bytes);
        index_by_name_[it.key()] = tensors_.size();
        tensors_.push_back(
            TensorInfo{it.key(), *dtype, std::move(shape), buffer + begin, size_t(nbytes), file_path});
    }
    return ok_status();
}

}  // namespace lmrun
