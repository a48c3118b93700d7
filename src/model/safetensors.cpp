#include "model/safetensors.h"

#include <algorithm>

#include "core/json_io.h"

namespace lmrun {
namespace {

constexpr size_t kHeaderSizeBytes = 8;
// A header is a few hundred bytes per tensor and nested three levels; safetensors itself
// refuses headers over 100 MB.
constexpr JsonLimits kHeaderLimits{8, size_t(100) << 20};

constexpr std::string_view kSupportedDTypes = "F32, BF16, F16, I32, I64, I8, U8, F8_E4M3";

// Only the safetensors spellings; torch names ("float32") are not valid here.
std::optional<DType> parse_safetensors_dtype(std::string_view name) {
    for (DType dtype :
         {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64, DType::I8, DType::U8, DType::F8E4M3})
        if (dtype_name(dtype) == name) return dtype;
    return std::nullopt;
}

// Where a header entry is: the file (the subject of errors) and the message prefix naming the tensor.
struct EntryPlace {
    const std::string& file_path;
    std::string where;  // "PATH: tensor 'NAME'"
};

Result<std::vector<int64_t>> parse_shape(const nlohmann::json& entry, const EntryPlace& place) {
    auto it = entry.find("shape");
    if (it == entry.end() || !it->is_array())
        return make_error_about(place.file_path, ErrorKind::Corrupt, "{}: missing or non-list 'shape'",
                                place.where);
    std::vector<int64_t> shape;
    for (const nlohmann::json& dim : *it) {
        if (!dim.is_number_integer() || dim.get<int64_t>() < 0 ||
            (dim.is_number_unsigned() && dim.get<uint64_t>() > uint64_t(INT64_MAX)))
            return make_error_about(place.file_path, ErrorKind::Corrupt,
                                    "{}: shape {} has a negative or non-integer dimension", place.where,
                                    it->dump());
        shape.push_back(dim.get<int64_t>());
    }
    return shape;
}

// Byte size of `shape` x `dtype`, or an error if it overflows 64 bits.
Result<uint64_t> shape_nbytes(const std::vector<int64_t>& shape, DType dtype, const EntryPlace& place) {
    uint64_t total = dtype_size_bytes(dtype);
    for (int64_t dim : shape) {
        if (__builtin_mul_overflow(total, uint64_t(dim), &total))
            return make_error_about(place.file_path, ErrorKind::Corrupt, "{}: shape {} is too large",
                                    place.where, shape_to_string(shape));
    }
    return total;
}

Result<std::pair<uint64_t, uint64_t>> parse_offsets(const nlohmann::json& entry, const EntryPlace& place) {
    auto it = entry.find("data_offsets");
    if (it == entry.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_unsigned() ||
        !(*it)[1].is_number_unsigned())
        return make_error_about(place.file_path, ErrorKind::Corrupt,
                                "{}: 'data_offsets' must be two non-negative integers [begin, end]",
                                place.where);
    uint64_t begin = (*it)[0].get<uint64_t>();
    uint64_t end = (*it)[1].get<uint64_t>();
    if (end < begin)
        return make_error_about(place.file_path, ErrorKind::Corrupt,
                                "{}: data_offsets [{}, {}] end before they begin", place.where, begin, end);
    return std::make_pair(begin, end);
}

Status parse_metadata(const nlohmann::json& value, const std::string& path,
                      std::map<std::string, std::string>& metadata) {
    if (!value.is_object())
        return make_error_about(path, ErrorKind::Corrupt, "{}: '__metadata__' must be an object of strings",
                                path);
    for (auto it = value.begin(); it != value.end(); ++it) {
        if (!it.value().is_string())
            return make_error_about(path, ErrorKind::Corrupt,
                                    "{}: '__metadata__' value of '{}' must be a string", path, it.key());
        metadata[it.key()] = it.value().get<std::string>();
    }
    return ok_status();
}

struct DataSpan {
    uint64_t begin;
    uint64_t end;
    std::string name;
};

// As the safetensors library requires: the tensors, in offset order, tile the data buffer
// exactly; no two share a byte, none leaves a gap and the last ends at the end of the file.
// Overlapping tensors would alias each other's weights; a gap hides bytes nobody reads.
Status check_buffer_tiling(std::vector<DataSpan> spans, uint64_t buffer_bytes, const std::string& path) {
    std::sort(spans.begin(), spans.end(), [](const DataSpan& a, const DataSpan& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t expected_begin = 0;
    for (size_t i = 0; i < spans.size(); ++i) {
        const DataSpan& span = spans[i];
        if (span.begin < expected_begin)
            return make_error_about(
                path, ErrorKind::Corrupt,
                "{}: tensor '{}' (data_offsets [{}, {}]) overlaps tensor '{}' (data_offsets [{}, {}])", path,
                span.name, span.begin, span.end, spans[i - 1].name, spans[i - 1].begin, spans[i - 1].end);
        if (span.begin > expected_begin)
            return make_error_about(
                path, ErrorKind::Corrupt,
                "{}: data buffer has a gap: bytes [{}, {}) before tensor '{}' belong to no tensor", path,
                expected_begin, span.begin, span.name);
        expected_begin = span.end;
    }
    if (expected_begin != buffer_bytes)
        return make_error_about(path, ErrorKind::Corrupt,
                                "{}: data buffer is {} bytes but its tensors end at byte {} (trailing bytes)",
                                path, buffer_bytes, expected_begin);
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

bool SafetensorsFile::release(const TensorInfo& tensor) const {
    const auto* begin = static_cast<const unsigned char*>(tensor.data);
    if (begin < file_->data() || begin + tensor.nbytes > file_->data() + file_->size_bytes()) return false;
    file_->release(tensor.data, tensor.nbytes);
    return true;
}

Status SafetensorsFile::parse_header() {
    const std::string& file_path = file_->path();
    size_t file_bytes = file_->size_bytes();
    if (file_bytes < kHeaderSizeBytes)
        return make_error_about(file_path, ErrorKind::Corrupt,
                                "{}: file is {} bytes, shorter than the 8-byte safetensors header size",
                                file_path, file_bytes);
    uint64_t header_bytes = 0;
    for (size_t i = 0; i < kHeaderSizeBytes; ++i) header_bytes |= uint64_t(file_->data()[i]) << (8 * i);
    if (header_bytes > file_bytes - kHeaderSizeBytes)
        return make_error_about(
            file_path, ErrorKind::Corrupt,
            "{}: header size {} bytes goes beyond the end of the file ({} bytes); truncated or not "
            "a safetensors file",
            file_path, header_bytes, file_bytes);
    const char* header_begin = reinterpret_cast<const char*>(file_->data()) + kHeaderSizeBytes;
    Result<nlohmann::json> parsed =
        parse_json(std::string_view(header_begin, header_bytes), file_path + ": JSON header", kHeaderLimits);
    if (!parsed.ok()) return with_subject(parsed.error(), file_path);
    const nlohmann::json& header = parsed.value();
    if (!header.is_object())
        return make_error_about(file_path, ErrorKind::Corrupt, "{}: JSON header is not an object", file_path);

    const unsigned char* buffer = file_->data() + kHeaderSizeBytes + header_bytes;
    uint64_t buffer_bytes = file_bytes - kHeaderSizeBytes - header_bytes;
    std::vector<DataSpan> spans;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            LMRUN_RETURN_IF_ERROR(parse_metadata(it.value(), file_path, metadata_));
            continue;
        }
        EntryPlace place{file_path, fmt::format("{}: tensor '{}'", file_path, it.key())};
        const nlohmann::json& entry = it.value();
        if (!entry.is_object())
            return make_error_about(file_path, ErrorKind::Corrupt, "{}: header entry is not an object",
                                    place.where);
        auto dtype_it = entry.find("dtype");
        if (dtype_it == entry.end() || !dtype_it->is_string())
            return make_error_about(file_path, ErrorKind::Corrupt, "{}: missing or non-string 'dtype'",
                                    place.where);
        std::optional<DType> dtype = parse_safetensors_dtype(dtype_it->get<std::string>());
        if (!dtype)
            return with_subject(
                make_error(ErrorKind::Unsupported, "{}: unsupported dtype '{}' (supported: {})", place.where,
                           dtype_it->get<std::string>(), kSupportedDTypes),
                file_path);
        LMRUN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, parse_shape(entry, place));
        LMRUN_ASSIGN_OR_RETURN(uint64_t nbytes, shape_nbytes(shape, *dtype, place));
        LMRUN_ASSIGN_OR_RETURN(auto offsets, parse_offsets(entry, place));
        auto [begin, end] = offsets;
        if (end - begin != nbytes)
            return make_error_about(
                file_path, ErrorKind::Corrupt,
                "{}: data_offsets [{}, {}] span {} bytes but shape {} of {} needs {} bytes", place.where,
                begin, end, end - begin, shape_to_string(shape), dtype_name(*dtype), nbytes);
        if (end > buffer_bytes)
            return make_error_about(
                file_path, ErrorKind::Corrupt,
                "{}: data_offsets [{}, {}] go beyond the {}-byte data buffer (file truncated?)", place.where,
                begin, end, buffer_bytes);
        index_by_name_[it.key()] = tensors_.size();
        spans.push_back(DataSpan{begin, end, it.key()});
        tensors_.push_back(
            TensorInfo{it.key(), *dtype, std::move(shape), buffer + begin, size_t(nbytes), file_path, true});
    }
    return check_buffer_tiling(std::move(spans), buffer_bytes, file_path);
}

}  // namespace lmrun
