#include "model/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "model/safetensors.h"

namespace lmrun {

size_t tensor_nbytes(DType dtype, const std::vector<int64_t>& shape) {
    size_t total = dtype_size_bytes(dtype);
    for (int64_t dim : shape) total *= size_t(dim);
    return total;
}

void SafetensorsWriter::FileCloser::operator()(std::FILE* file) const {
    std::fclose(file);
}

Result<SafetensorsWriter> SafetensorsWriter::create(const std::string& path,
                                                    const std::vector<TensorToWrite>& tensors,
                                                    const std::map<std::string, std::string>& metadata) {
    SafetensorsWriter writer;
    writer.path_ = path;
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::set<std::string> seen;
    size_t offset = 0;
    for (const TensorToWrite& tensor : tensors) {
        if (tensor.name.empty() || tensor.name == "__metadata__")
            return make_error("{}: invalid tensor name '{}'", path, tensor.name);
        if (!seen.insert(tensor.name).second)
            return make_error("{}: duplicate tensor name '{}'", path, tensor.name);
        for (int64_t dim : tensor.shape)
            if (dim < 0)
                return make_error("{}: tensor '{}' has negative shape {}", path, tensor.name,
                                  shape_to_string(tensor.shape));
        size_t nbytes = tensor_nbytes(tensor.dtype, tensor.shape);
        header[tensor.name] = {{"dtype", dtype_name(tensor.dtype)},
                               {"shape", tensor.shape},
                               {"data_offsets", {offset, offset + nbytes}}};
        offset += nbytes;
        writer.tensor_nbytes_.push_back(nbytes);
        writer.tensor_names_.push_back(tensor.name);
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    unsigned char size_bytes[8];
    for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));

    writer.file_.reset(std::fopen(path.c_str(), "wb"));
    if (!writer.file_) return make_error("{}: cannot create file: {}", path, std::strerror(errno));
    if (std::fwrite(size_bytes, 1, 8, writer.file_.get()) != 8 ||
        std::fwrite(text.data(), 1, text.size(), writer.file_.get()) != text.size())
        return make_error("{}: write failed: {}", path, std::strerror(errno));
    return writer;
}

Status SafetensorsWriter::write_next(const void* data, size_t nbytes) {
    if (!file_) return make_error("{}: writer is closed", path_);
    if (next_tensor_ >= tensor_nbytes_.size())
        return make_error("{}: more tensors written than declared ({})", path_, tensor_nbytes_.size());
    if (nbytes != tensor_nbytes_[next_tensor_])
        return make_error("{}: tensor '{}' has {} bytes of data, expected {}", path_,
                          tensor_names_[next_tensor_], nbytes, tensor_nbytes_[next_tensor_]);
    if (nbytes > 0 && std::fwrite(data, 1, nbytes, file_.get()) != nbytes)
        return make_error("{}: write failed: {}", path_, std::strerror(errno));
    ++next_tensor_;
    return ok_status();
}

Status SafetensorsWriter::finish() {
    if (!file_) return make_error("{}: writer is closed", path_);
    if (next_tensor_ != tensor_nbytes_.size())
        return make_error("{}: only {} of {} tensors were written", path_, next_tensor_,
                          tensor_nbytes_.size());
    std::FILE* file = file_.release();
    if (std::fclose(file) != 0) return make_error("{}: close failed: {}", path_, std::strerror(errno));
    return ok_status();
}

Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata) {
    LMRUN_ASSIGN_OR_RETURN(SafetensorsWriter writer, SafetensorsWriter::create(path, tensors, metadata));
    for (const TensorToWrite& tensor : tensors) {
        size_t nbytes = tensor_nbytes(tensor.dtype, tensor.shape);
        if (nbytes > 0 && tensor.data == nullptr)
            return make_error("{}: tensor '{}' has no data", path, tensor.name);
        LMRUN_RETURN_IF_ERROR(writer.write_next(tensor.data, nbytes));
    }
    return writer.finish();
}

}  // namespace lmrun
