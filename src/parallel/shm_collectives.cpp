#include "parallel/shm_collectives.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/parallel.h"
#include "parallel/shared_memory.h"

namespace lmrun::parallel {

struct ShmCollectives::Barrier {
    alignas(64) std::atomic<uint32_t> arrived{0};
    WakeWord generation;  // word = barriers completed
};

namespace {

// Copies and sums of at least this many bytes are split over the rank's threads.
constexpr size_t kThreadedBytes = size_t(128) << 10;

template <typename Fn>
void for_range(int64_t count, size_t element_bytes, Fn&& fn) {
    if (size_t(count) * element_bytes >= kThreadedBytes && num_threads() > 1) {
        parallel_for(count, fn);
    } else {
        fn(int64_t(0), count);
    }
}

void copy_floats(float* to, const float* from, int64_t count) {
    for_range(count, sizeof(float), [&](int64_t begin, int64_t end) {
        std::memcpy(to + begin, from + begin, size_t(end - begin) * sizeof(float));
    });
}

}  // namespace

size_t ShmCollectives::required_bytes(const Shape& shape) {
    return round_up_to_page(sizeof(Barrier)) +
           2 * size_t(shape.num_ranks) * round_up_to_page(shape.slot_bytes);
}

ShmCollectives::ShmCollectives(std::byte* region, const Shape& shape, int rank, const WaitContext& wait)
    : shape_(shape), slot_stride_(round_up_to_page(shape.slot_bytes)), rank_(rank), wait_(wait) {
    LMRUN_CHECK(rank >= 0 && rank < shape.num_ranks, "rank outside the group");
    barrier_ = reinterpret_cast<Barrier*>(region);
    slots_ = region + round_up_to_page(sizeof(Barrier));
}

std::byte* ShmCollectives::slot(int buffer_set, int rank) const {
    return slots_ + (size_t(buffer_set) * size_t(shape_.num_ranks) + size_t(rank)) * slot_stride_;
}

bool ShmCollectives::barrier() {
    const uint32_t generation = barrier_->generation.word.load(std::memory_order_acquire);
    if (barrier_->arrived.fetch_add(1, std::memory_order_acq_rel) == uint32_t(shape_.num_ranks - 1)) {
        // Last to arrive: nobody can arrive again before the generation moves on.
        barrier_->arrived.store(0, std::memory_order_relaxed);
        barrier_->generation.notify();
        return true;
    }
    return wait_until(barrier_->generation, wait_, [&] {
        return barrier_->generation.word.load(std::memory_order_acquire) != generation;
    });
}

// out[i] = slot_0[i] + slot_1[i] + ... for i in [begin, end): the one summation order.
void ShmCollectives::reduce_in_rank_order(int buffer_set, int64_t begin, int64_t end, float* out) const {
    for_range(end - begin, sizeof(float) * size_t(shape_.num_ranks), [&](int64_t from, int64_t to) {
        from += begin, to += begin;
        const float* first = reinterpret_cast<const float*>(slot(buffer_set, 0));
        std::memcpy(out + from, first + from, size_t(to - from) * sizeof(float));
        for (int r = 1; r < shape_.num_ranks; ++r) {
            const float* term = reinterpret_cast<const float*>(slot(buffer_set, r));
            for (int64_t i = from; i < to; ++i) out[i] += term[i];
        }
    });
}

bool ShmCollectives::all_reduce(float* data, int64_t count) {
    const size_t bytes = size_t(count) * sizeof(float);
    LMRUN_CHECK(bytes <= shape_.slot_bytes, "all-reduce of %zu bytes exceeds the %zu-byte slots", bytes,
                shape_.slot_bytes);
    if (shape_.num_ranks == 1 || count == 0) return true;
    const int set = next_buffer_set();
    float* mine = reinterpret_cast<float*>(slot(set, rank_));
    copy_floats(mine, data, count);
    if (!barrier()) return false;
    if (shape_.num_ranks == 2 || bytes < kTwoPhaseMinBytes) {
        reduce_in_rank_order(set, 0, count, data);
        return true;
    }
    // Slices of whole 64-byte lines, so that two ranks never write the same cache line.
    auto slice_begin = [&](int r) { return std::min(count, (count * r / shape_.num_ranks + 15) / 16 * 16); };
    const int64_t begin = slice_begin(rank_), end = slice_begin(rank_ + 1);
    reduce_in_rank_order(set, begin, end, data);
    std::memcpy(mine + begin, data + begin, size_t(end - begin) * sizeof(float));
    if (!barrier()) return false;
    for (int r = 0; r < shape_.num_ranks; ++r) {
        if (r == rank_) continue;
        const int64_t from = slice_begin(r), to = slice_begin(r + 1);
        copy_floats(data + from, reinterpret_cast<const float*>(slot(set, r)) + from, to - from);
    }
    return true;
}

bool ShmCollectives::gather(const void* local, size_t bytes, void* out) {
    LMRUN_CHECK(bytes <= shape_.slot_bytes, "gather of %zu bytes exceeds the %zu-byte slots", bytes,
                shape_.slot_bytes);
    const int set = next_buffer_set();
    std::memcpy(slot(set, rank_), local, bytes);
    if (!barrier()) return false;
    if (rank_ != 0) return true;
    for (int r = 0; r < shape_.num_ranks; ++r)
        std::memcpy(static_cast<std::byte*>(out) + size_t(r) * bytes, slot(set, r), bytes);
    return true;
}

bool ShmCollectives::gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                                    int64_t out_cols) {
    const int64_t count = num_rows * local_cols;
    LMRUN_CHECK(size_t(count) * sizeof(float) <= shape_.slot_bytes, "gather exceeds the slots");
    const int set = next_buffer_set();
    copy_floats(reinterpret_cast<float*>(slot(set, rank_)), local, count);
    if (!barrier()) return false;
    if (rank_ != 0) return true;
    for_range(num_rows, size_t(out_cols) * sizeof(float), [&](int64_t begin, int64_t end) {
        for (int r = 0; r < shape_.num_ranks; ++r) {
            const int64_t first_col = int64_t(r) * local_cols;
            const int64_t cols = std::clamp<int64_t>(out_cols - first_col, 0, local_cols);
            const float* source = reinterpret_cast<const float*>(slot(set, r));
            for (int64_t row = begin; row < end; ++row)
                std::memcpy(out + row * out_cols + first_col, source + row * local_cols,
                            size_t(cols) * sizeof(float));
        }
    });
    return true;
}

void ShmCollectives::wake_all() {
    futex_wake_all(barrier_->generation.word);
}

}  // namespace lmrun::parallel
