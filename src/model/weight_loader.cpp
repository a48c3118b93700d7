#include "model/weight_loader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/parallel.h"

namespace lmrun {
namespace {

bool is_float(DType dtype) {
    return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16;
}

// What one loader copies: src viewed as [rows, src_cols]; a block of num_rows x num_cols
// starting at (src_row, src_col) goes to dst rows [dst_row, dst_row + num_rows) (dst rows
// are num_cols wide).
struct ShardCopy {
    std::vector<int64_t> expected_src_shape;
    int64_t src_row = 0;
    int64_t src_col = 0;
    int64_t num_rows = 0;
    int64_t num_cols = 0;
    int64_t dst_row = 0;
};

// Where a loader writes its shard: a tensor (rows copied, converted to its dtype) or a linear
// weight's packed layout (rows packed straight from the mapped file, no staged copy).
class Destination {
  public:
    explicit Destination(Tensor& tensor) : tensor_(&tensor), shape_(tensor.shape()) {}
    explicit Destination(kernels::LinearWeightBuilder& packed)
        : packed_(&packed), shape_{packed.out_features(), packed.in_features()} {}

    const std::vector<int64_t>& shape() const { return shape_; }
    int64_t rank() const { return int64_t(shape_.size()); }
    int64_t dim(int64_t i) const { return shape_[size_t(i)]; }
    int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }
    int64_t cols() const { return shape_.size() <= 1 ? 1 : shape_[0] == 0 ? 0 : numel() / shape_[0]; }
    int64_t numel() const {
        int64_t total = 1;
        for (int64_t size : shape_) total *= size;
        return total;
    }
    // Whether the rows must arrive as int8 (a quantized checkpoint's weight), else as a float type
    // (converted, or quantized at load by an int8 builder).
    bool takes_int8() const {
        return tensor_ ? tensor_->dtype() == DType::I8
                       : packed_->row_source() == kernels::WeightRowSource::Int8;
    }
    // Float rows go to a builder, or to a tensor allocated in a float dtype.
    bool takes_float() const {
        return packed_ ? !takes_int8()
                       : is_float(tensor_->dtype()) && (!tensor_->empty() || tensor_->numel() == 0);
    }

    // Copies num_rows rows of num_cols elements (`src` rows `src_stride` bytes apart) to rows
    // [dst_row, ...); returns -1 or the index of the first row holding NaN or Inf once converted.
    int64_t write_rows(const unsigned char* src, DType src_dtype, size_t src_stride, int64_t num_rows,
                       int64_t dst_row) const;
    void zero_rows(int64_t first_row, int64_t num_rows) const;

  private:
    Tensor* tensor_ = nullptr;
    kernels::LinearWeightBuilder* packed_ = nullptr;
    std::vector<int64_t> shape_;
};

std::string tp_note(const ParallelConfig& parallel) {
    return parallel.tp_size > 1 ? fmt::format(" (full checkpoint shape for tp_size {})", parallel.tp_size)
                                : "";
}

Status check_inputs(const TensorInfo& src, const Destination& dst, const ParallelConfig& parallel) {
    if (parallel.tp_size < 1 || parallel.tp_rank < 0 || parallel.tp_rank >= parallel.tp_size)
        return make_error("{}: tensor '{}': invalid tensor-parallel rank {} of size {}", src.file_path,
                          src.name, parallel.tp_rank, parallel.tp_size);
    // int8 weights of a quantized checkpoint load into int8 parameters, and only there.
    if (dst.takes_int8() && src.dtype != DType::I8)
        return make_error(ErrorKind::Corrupt,
                          "{}: tensor '{}' has dtype {}, expected I8 (config.json's quantization_config "
                          "says this layer is stored in int8)",
                          src.file_path, src.name, dtype_name(src.dtype));
    if (src.dtype == DType::I8 && !dst.takes_int8())
        return make_error(ErrorKind::Unsupported,
                          "{}: tensor '{}' is int8 but config.json declares no quantization for it (an int8 "
                          "checkpoint needs a compressed-tensors quantization_config)",
                          src.file_path, src.name);
    if (src.dtype == DType::I8) return ok_status();
    if (!is_float(src.dtype))
        return make_error(ErrorKind::Unsupported,
                          "{}: tensor '{}' has dtype {}, expected a float type (F32, BF16, F16)",
                          src.file_path, src.name, dtype_name(src.dtype));
    if (!dst.takes_float())
        return make_error("{}: tensor '{}': destination must be an allocated F32/BF16/F16 tensor",
                          src.file_path, src.name);
    return ok_status();
}

Status check_shape(const TensorInfo& src, const std::vector<int64_t>& expected,
                   const ParallelConfig& parallel) {
    if (src.shape == expected) return ok_status();
    return make_error(ErrorKind::Corrupt, "{}: tensor '{}' has shape {}, expected {}{}", src.file_path,
                      src.name, src.shape_string(), shape_to_string(expected), tp_note(parallel));
}

// Converts `count` elements; `src` may be unaligned (safetensors only promises byte offsets).
void convert_row(const unsigned char* src, DType src_dtype, void* dst, DType dst_dtype, int64_t count,
                 std::vector<unsigned char>& aligned, std::vector<float>& floats) {
    size_t src_bytes = size_t(count) * dtype_size_bytes(src_dtype);
    if (src_dtype == dst_dtype) {
        std::memcpy(dst, src, src_bytes);
        return;
    }
    const void* source = src;
    if (reinterpret_cast<uintptr_t>(src) % dtype_size_bytes(src_dtype) != 0) {
        aligned.resize(src_bytes + 8);
        std::memcpy(aligned.data(), src, src_bytes);
        source = aligned.data();
    }
    if (dst_dtype == DType::F32) {
        convert_to_f32(source, src_dtype, static_cast<float*>(dst), size_t(count));
        return;
    }
    floats.resize(size_t(count));
    convert_to_f32(source, src_dtype, floats.data(), size_t(count));
    convert_from_f32(floats.data(), dst, dst_dtype, size_t(count));
}

// Unmaps the pages of `src` from this process once its slice was copied: the page cache keeps
// them for other ranks (and a later read faults them back in), but this process's resident
// memory no longer counts every page it touched, which for a row-parallel slice is the whole
// tensor. So a rank's resident memory while loading is its shard plus about one tensor.
void release_source_pages(const TensorInfo& src) {
    if (!src.file_mapped) return;
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(src.data) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(src.data) + src.nbytes) / page * page;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): page-aligned addresses inside the checkpoint's mapping.
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void lower_to(std::atomic<int64_t>& value, int64_t candidate) {
    int64_t current = value.load();
    while (candidate < current && !value.compare_exchange_weak(current, candidate)) {
    }
}

// A converted row holding NaN or Inf (all exponent bits set) is a corrupt weight. Checked on the
// rows this rank loads, so a shard damaged only where another rank reads still loads here.
int64_t Destination::write_rows(const unsigned char* src, DType src_dtype, size_t src_stride,
                                int64_t num_rows, int64_t dst_row) const {
    const int64_t num_cols = cols();
    if (packed_)
        return packed_->pack_rows(dst_row, kernels::WeightRows{src, src_dtype, num_rows, src_stride});
    const size_t dst_row_bytes = size_t(num_cols) * dtype_size_bytes(tensor_->dtype());
    auto* dst_base = static_cast<unsigned char*>(tensor_->raw()) + size_t(dst_row) * dst_row_bytes;
    std::atomic<int64_t> first_bad_row{num_rows};
    parallel_for(num_rows, [&](int64_t begin, int64_t end) {
        std::vector<unsigned char> aligned;
        std::vector<float> floats;
        for (int64_t row = begin; row < end; ++row) {
            unsigned char* to = dst_base + size_t(row) * dst_row_bytes;
            convert_row(src + size_t(row) * src_stride, src_dtype, to, tensor_->dtype(), num_cols, aligned,
                        floats);
            if (has_non_finite(to, tensor_->dtype(), size_t(num_cols))) lower_to(first_bad_row, row);
        }
    });
    return first_bad_row.load() == num_rows ? -1 : first_bad_row.load();
}

void Destination::zero_rows(int64_t first_row, int64_t num_rows) const {
    if (packed_) return packed_->zero_rows(first_row, num_rows);
    const size_t row_bytes = size_t(cols()) * dtype_size_bytes(tensor_->dtype());
    std::memset(static_cast<unsigned char*>(tensor_->raw()) + size_t(first_row) * row_bytes, 0,
                size_t(num_rows) * row_bytes);
}

Status copy_shard(const TensorInfo& src, const Destination& dst, const ShardCopy& copy,
                  const ParallelConfig& parallel) {
    LMRUN_RETURN_IF_ERROR(check_inputs(src, dst, parallel));
    LMRUN_RETURN_IF_ERROR(check_shape(src, copy.expected_src_shape, parallel));
    int64_t src_rows = src.shape.empty() ? 1 : src.shape[0];
    int64_t src_cols = src_rows == 0 ? 0 : src.numel() / src_rows;
    LMRUN_CHECK(copy.src_row >= 0 && copy.src_row + copy.num_rows <= src_rows && copy.src_col >= 0 &&
                    copy.src_col + copy.num_cols <= src_cols && copy.dst_row + copy.num_rows <= dst.rows() &&
                    copy.num_cols == dst.cols(),
                "shard copy out of range for %s", src.name.c_str());
    const size_t src_elem = dtype_size_bytes(src.dtype);
    const auto* first = static_cast<const unsigned char*>(src.data) +
                        (size_t(copy.src_row) * size_t(src_cols) + size_t(copy.src_col)) * src_elem;
    const int64_t bad_row =
        dst.write_rows(first, src.dtype, size_t(src_cols) * src_elem, copy.num_rows, copy.dst_row);
    release_source_pages(src);
    if (bad_row >= 0)
        return with_subject(
            make_error(ErrorKind::Corrupt,
                       "{}: tensor '{}' holds NaN or Inf values (row {}, columns {}..{}): the "
                       "file is corrupt",
                       src.file_path, src.name, copy.src_row + bad_row, copy.src_col,
                       copy.src_col + copy.num_cols - 1),
            src.file_path);
    return ok_status();
}

Status load_replicated_to(const TensorInfo& src, const Destination& dst) {
    ShardCopy copy;
    copy.expected_src_shape = dst.shape();
    copy.num_rows = dst.rows();
    copy.num_cols = dst.cols();
    return copy_shard(src, dst, copy, ParallelConfig{});
}

Status load_column_parallel_to(const TensorInfo& src, const Destination& dst,
                               const ParallelConfig& parallel) {
    if (dst.rank() < 1)
        return make_error("{}: tensor '{}': column-parallel needs rank >= 1", src.file_path, src.name);
    ShardCopy copy;
    copy.expected_src_shape = dst.shape();
    copy.expected_src_shape[0] *= parallel.tp_size;
    copy.src_row = parallel.tp_rank * dst.dim(0);
    copy.num_rows = dst.dim(0);
    copy.num_cols = dst.cols();
    return copy_shard(src, dst, copy, parallel);
}

Status load_row_parallel_to(const TensorInfo& src, const Destination& dst, const ParallelConfig& parallel) {
    if (dst.rank() == 1) return load_replicated_to(src, dst);  // a bias is added once, after the reduction
    if (dst.rank() != 2)
        return make_error("{}: tensor '{}': row-parallel needs a 2-D or 1-D parameter", src.file_path,
                          src.name);
    ShardCopy copy;
    copy.expected_src_shape = {dst.dim(0), dst.dim(1) * parallel.tp_size};
    copy.src_row = 0;
    copy.src_col = parallel.tp_rank * dst.dim(1);
    copy.num_rows = dst.dim(0);
    copy.num_cols = dst.dim(1);
    return copy_shard(src, dst, copy, parallel);
}

Status load_qkv_shard_to(const TensorInfo& src, const Destination& dst, QkvShard shard, int64_t num_heads,
                         int64_t num_kv_heads, int64_t head_dim, const ParallelConfig& parallel) {
    int64_t tp = parallel.tp_size;
    if (num_heads <= 0 || num_kv_heads <= 0 || head_dim <= 0 || tp < 1 || num_heads % tp != 0 ||
        (num_kv_heads >= tp ? num_kv_heads % tp != 0 : tp % num_kv_heads != 0))
        return make_error("{}: tensor '{}': {} heads / {} kv heads cannot be split over tp_size {}",
                          src.file_path, src.name, num_heads, num_kv_heads, tp);
    if (dst.rank() < 1 || dst.rank() > 2)
        return make_error("{}: tensor '{}': qkv parameter must be 1-D or 2-D", src.file_path, src.name);
    int64_t local_q_heads = num_heads / tp;
    int64_t local_kv_heads = std::max<int64_t>(1, num_kv_heads / tp);
    int64_t packed_rows = (local_q_heads + 2 * local_kv_heads) * head_dim;
    if (dst.dim(0) != packed_rows)
        return make_error("{}: tensor '{}': packed qkv parameter has {} rows, expected {}", src.file_path,
                          src.name, dst.dim(0), packed_rows);
    bool is_q = shard == QkvShard::Q;
    int64_t local_heads = is_q ? local_q_heads : local_kv_heads;
    int64_t first_head = parallel.tp_rank * local_heads;
    // Fewer kv heads than ranks: consecutive ranks share (replicate) one kv head, as vLLM does.
    if (!is_q && num_kv_heads < tp) first_head = parallel.tp_rank / (tp / num_kv_heads);
    ShardCopy copy;
    copy.expected_src_shape = dst.shape();
    copy.expected_src_shape[0] = (is_q ? num_heads : num_kv_heads) * head_dim;
    copy.src_row = first_head * head_dim;
    copy.num_rows = local_heads * head_dim;
    copy.num_cols = dst.cols();
    copy.dst_row = shard == QkvShard::Q   ? 0
                   : shard == QkvShard::K ? local_q_heads * head_dim
                                          : (local_q_heads + local_kv_heads) * head_dim;
    return copy_shard(src, dst, copy, parallel);
}

Status load_merged_column_shard_to(const TensorInfo& src, const Destination& dst, int index,
                                   std::span<const int64_t> output_sizes, const ParallelConfig& parallel) {
    int64_t tp = parallel.tp_size;
    if (index < 0 || size_t(index) >= output_sizes.size() || tp < 1 || dst.rank() < 1)
        return make_error("{}: tensor '{}': bad merged-column index {} of {} outputs", src.file_path,
                          src.name, index, output_sizes.size());
    for (int64_t size : output_sizes)
        if (size <= 0 || size % tp != 0)
            return make_error("{}: tensor '{}': output size {} cannot be split over tp_size {}",
                              src.file_path, src.name, size, tp);
    int64_t total = std::accumulate(output_sizes.begin(), output_sizes.end(), int64_t(0));
    if (dst.dim(0) != total / tp)
        return make_error("{}: tensor '{}': merged parameter has {} rows, expected {}", src.file_path,
                          src.name, dst.dim(0), total / tp);
    int64_t local_rows = output_sizes[index] / tp;
    ShardCopy copy;
    copy.expected_src_shape = dst.shape();
    copy.expected_src_shape[0] = output_sizes[index];
    copy.src_row = parallel.tp_rank * local_rows;
    copy.num_rows = local_rows;
    copy.num_cols = dst.cols();
    copy.dst_row = std::accumulate(output_sizes.begin(), output_sizes.begin() + index, int64_t(0)) / tp;
    return copy_shard(src, dst, copy, parallel);
}

Status load_vocab_parallel_to(const TensorInfo& src, const Destination& dst, const ParallelConfig& parallel) {
    if (dst.rank() != 2 || src.shape.size() != 2)
        return make_error(ErrorKind::Corrupt,
                          "{}: tensor '{}' has shape {}, expected a 2-D [vocab, hidden] tensor",
                          src.file_path, src.name, src.shape_string());
    int64_t rows_per_rank = dst.dim(0);
    int64_t vocab = src.shape[0];
    if (vocab > rows_per_rank * parallel.tp_size || src.shape[1] != dst.dim(1))
        return make_error(ErrorKind::Corrupt, "{}: tensor '{}' has shape {}, expected [<= {}, {}]{}",
                          src.file_path, src.name, src.shape_string(), rows_per_rank * parallel.tp_size,
                          dst.dim(1), tp_note(parallel));
    int64_t begin = std::min(vocab, int64_t(parallel.tp_rank) * rows_per_rank);
    int64_t end = std::min(vocab, begin + rows_per_rank);
    ShardCopy copy;
    copy.expected_src_shape = src.shape;
    copy.src_row = begin;
    copy.num_rows = end - begin;
    copy.num_cols = dst.dim(1);
    LMRUN_RETURN_IF_ERROR(copy_shard(src, dst, copy, parallel));
    // Padding rows: zero so that padded logits / embeddings are inert.
    if (copy.num_rows < rows_per_rank) dst.zero_rows(copy.num_rows, rows_per_rank - copy.num_rows);
    return ok_status();
}

}  // namespace

Status load_replicated(const TensorInfo& src, Tensor& dst) {
    return load_replicated_to(src, Destination(dst));
}

Status load_column_parallel(const TensorInfo& src, Tensor& dst, const ParallelConfig& parallel) {
    return load_column_parallel_to(src, Destination(dst), parallel);
}

Status load_column_parallel(const TensorInfo& src, kernels::LinearWeightBuilder& dst,
                            const ParallelConfig& parallel) {
    return load_column_parallel_to(src, Destination(dst), parallel);
}

Status load_row_parallel(const TensorInfo& src, Tensor& dst, const ParallelConfig& parallel) {
    return load_row_parallel_to(src, Destination(dst), parallel);
}

Status load_row_parallel(const TensorInfo& src, kernels::LinearWeightBuilder& dst,
                         const ParallelConfig& parallel) {
    return load_row_parallel_to(src, Destination(dst), parallel);
}

Status load_qkv_shard(const TensorInfo& src, Tensor& dst, QkvShard shard, int64_t num_heads,
                      int64_t num_kv_heads, int64_t head_dim, const ParallelConfig& parallel) {
    return load_qkv_shard_to(src, Destination(dst), shard, num_heads, num_kv_heads, head_dim, parallel);
}

Status load_qkv_shard(const TensorInfo& src, kernels::LinearWeightBuilder& dst, QkvShard shard,
                      int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                      const ParallelConfig& parallel) {
    return load_qkv_shard_to(src, Destination(dst), shard, num_heads, num_kv_heads, head_dim, parallel);
}

Status load_merged_column_shard(const TensorInfo& src, Tensor& dst, int index,
                                std::span<const int64_t> output_sizes, const ParallelConfig& parallel) {
    return load_merged_column_shard_to(src, Destination(dst), index, output_sizes, parallel);
}

Status load_merged_column_shard(const TensorInfo& src, kernels::LinearWeightBuilder& dst, int index,
                                std::span<const int64_t> output_sizes, const ParallelConfig& parallel) {
    return load_merged_column_shard_to(src, Destination(dst), index, output_sizes, parallel);
}

Status load_vocab_parallel(const TensorInfo& src, Tensor& dst, const ParallelConfig& parallel) {
    return load_vocab_parallel_to(src, Destination(dst), parallel);
}

Status load_vocab_parallel(const TensorInfo& src, kernels::LinearWeightBuilder& dst,
                           const ParallelConfig& parallel) {
    return load_vocab_parallel_to(src, Destination(dst), parallel);
}

}  // namespace lmrun
