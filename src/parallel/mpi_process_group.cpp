#include "parallel/mpi_process_group.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/logging.h"
#include "parallel/futex.h"

namespace lmrun::parallel {
namespace {

struct BroadcastHeader {
    uint64_t bytes = 0;
    uint64_t exit = 0;  // the job ends: no payload follows
};

const char kExitMessage[] = "lmrun-mpi-exit";

void sleep_ns(int64_t ns) {
    timespec pause{0, long(ns)};
    nanosleep(&pause, nullptr);
}

}  // namespace

MpiProcessGroup::MpiProcessGroup(const MpiWorld& world)
    : ProcessGroup(world.rank, world.size), world_(world) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
}

MpiProcessGroup::~MpiProcessGroup() = default;  // MPI_Finalize frees the communicator

bool MpiProcessGroup::check(int mpi_result) {
    if (mpi_result == MPI_SUCCESS) return true;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(mpi_result, text, &length);
    log_error("MPI: {}", text);
    failed_ = true;
    return false;
}

void MpiProcessGroup::reserve_message_bytes(size_t bytes) {
    if (bytes <= buffer_bytes_) return;
    const size_t rounded = (bytes + 63) / 64 * 64;
    buffer_.reset(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
    LMRUN_CHECK(buffer_ != nullptr, "out of memory for a %zu-byte message buffer", rounded);
    buffer_bytes_ = rounded;
}

// Spins on MPI_Test for 1 ms, then sleeps between tests, backing off to 1 ms: an idle worker
// sleeps, a busy one answers within microseconds.
bool MpiProcessGroup::wait_polling(MPI_Request& request) {
    const int64_t spin_end = monotonic_ns() + 1'000'000;
    int64_t pause_ns = 20'000;
    for (;;) {
        int done = 0;
        if (!check(MPI_Test(&request, &done, MPI_STATUS_IGNORE))) return false;
        if (done) return true;
        if (monotonic_ns() < spin_end) {
            cpu_relax();
            continue;
        }
        sleep_ns(pause_ns);
        pause_ns = std::min<int64_t>(pause_ns * 2, 1'000'000);
    }
}

void MpiProcessGroup::all_reduce(float* data, int64_t count) {
    if (failed() || count == 0) return;
    check(MPI_Allreduce(MPI_IN_PLACE, data, int(count), MPI_FLOAT, MPI_SUM, comm_));
}

void MpiProcessGroup::gather(const void* local, size_t bytes, void* out) {
    if (failed()) return;
    check(MPI_Gather(local, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, 0, comm_));
}

void MpiProcessGroup::gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                                     int64_t out_cols) {
    if (failed()) return;
    const int64_t count = num_rows * local_cols;
    if (rank() == 0 && staging_.size() < size_t(count * size())) staging_.resize(size_t(count * size()));
    if (!check(MPI_Gather(local, int(count), MPI_FLOAT, staging_.data(), int(count), MPI_FLOAT, 0, comm_)))
        return;
    if (rank() != 0) return;
    for (int r = 0; r < size(); ++r) {
        const int64_t first_col = int64_t(r) * local_cols;
        const int64_t cols = std::clamp<int64_t>(out_cols - first_col, 0, local_cols);
        const float* source = staging_.data() + int64_t(r) * count;
        for (int64_t row = 0; row < num_rows; ++row)
            std::memcpy(out + row * out_cols + first_col, source + row * local_cols,
                        size_t(cols) * sizeof(float));
    }
}

std::span<const std::byte> MpiProcessGroup::broadcast(std::span<const std::byte> message) {
    if (failed()) return {};
    BroadcastHeader header;
    const bool exit = rank() == 0 && message.size() == sizeof(kExitMessage) &&
                      std::memcmp(message.data(), kExitMessage, sizeof(kExitMessage)) == 0;
    if (rank() == 0) header = {uint64_t(message.size()), exit ? 1u : 0u};
    MPI_Request request;
    if (!check(MPI_Ibcast(&header, sizeof(header), MPI_BYTE, 0, comm_, &request))) return {};
    if (!(rank() == 0 ? check(MPI_Wait(&request, MPI_STATUS_IGNORE)) : wait_polling(request))) return {};
    if (header.exit) return rank() == 0 ? message : mpi_exit_message();
    if (rank() == 0) {
        if (header.bytes > 0 &&
            !check(MPI_Bcast(const_cast<std::byte*>(message.data()), int(header.bytes), MPI_BYTE, 0, comm_)))
            return {};
        return message;
    }
    reserve_message_bytes(std::max<size_t>(header.bytes, 64));
    if (header.bytes > 0 && !check(MPI_Bcast(buffer_.get(), int(header.bytes), MPI_BYTE, 0, comm_)))
        return {};
    return std::span<const std::byte>(buffer_.get(), size_t(header.bytes));
}

void MpiProcessGroup::barrier() {
    if (!failed()) check(MPI_Barrier(comm_));
}

MpiProcessGroup& mpi_world_group() {
    static MpiProcessGroup group(init_mpi().value());
    return group;
}

std::span<const std::byte> mpi_exit_message() {
    return std::as_bytes(std::span(kExitMessage));
}

}  // namespace lmrun::parallel
