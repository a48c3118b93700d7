// Latency and bandwidth of the tensor-parallel all-reduce, against a memcpy of the same bytes:
// hidden sizes 1024 and 4096 at 1, 8 and 64 rows (a decode step's row-parallel outputs), on
// the shared-memory group (this process forks its ranks, one per CPU) or on MPI.
// Usage:
//   allreduce_bench [--ranks 2]                          shared memory
//   mpirun -np 2 --mca btl vader,self allreduce_bench --mpi   MPI over shared memory
//   mpirun -np 2 --mca btl tcp,self allreduce_bench --mpi     MPI over TCP (loopback)
// Times are medians of 7 runs of back-to-back all-reduces, as seen by rank 0.
#include <sys/wait.h>
#include <unistd.h>

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "parallel/futex.h"
#include "parallel/mpi_process_group.h"
#include "parallel/placement.h"
#include "parallel/shm_process_group.h"

namespace {

using namespace lmrun;
using namespace lmrun::parallel;

const int64_t kHiddenSizes[] = {1024, 4096};
const int64_t kRows[] = {1, 8, 64};
constexpr int kRuns = 7;

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Seconds per call of `op`, `iterations` back to back, median of kRuns; every rank runs it.
template <typename Op>
double seconds_per_op(ProcessGroup& group, int iterations, Op&& op) {
    for (int i = 0; i < iterations / 4 + 10; ++i) op();  // warm caches and spin paths
    std::vector<double> runs;
    for (int run = 0; run < kRuns; ++run) {
        group.barrier();
        const int64_t start = monotonic_ns();
        for (int i = 0; i < iterations; ++i) op();
        runs.push_back(double(monotonic_ns() - start) * 1e-9 / iterations);
    }
    return median(runs);
}

double memcpy_seconds(size_t bytes, int iterations) {
    std::vector<char> from(bytes, 1), to(bytes);
    std::vector<double> runs;
    for (int run = 0; run < kRuns; ++run) {
        const int64_t start = monotonic_ns();
        for (int i = 0; i < iterations; ++i) {
            std::memcpy(to.data(), from.data(), bytes);
            asm volatile("" : : "r"(to.data()) : "memory");
        }
        runs.push_back(double(monotonic_ns() - start) * 1e-9 / iterations);
    }
    return median(runs);
}

void run_benchmarks(ProcessGroup& group, const char* transport) {
    const int64_t max_count = 64 * 4096;
    std::vector<float> data(static_cast<size_t>(max_count), 1.0f);
    const double barrier_s = seconds_per_op(group, 20000, [&] { group.barrier(); });
    if (group.rank() == 0) {
        std::printf("%s, %d ranks: barrier %.2f us\n", transport, group.size(), barrier_s * 1e6);
        std::printf("%8s %6s %10s %14s %12s %14s %10s\n", "hidden", "rows", "bytes", "all-reduce us", "GB/s",
                    "memcpy us", "ratio");
    }
    for (int64_t hidden : kHiddenSizes) {
        for (int64_t rows : kRows) {
            const int64_t count = rows * hidden;
            const size_t bytes = size_t(count) * sizeof(float);
            const int iterations = bytes < (64 << 10) ? 20000 : 2000;
            const double reduce_s =
                seconds_per_op(group, iterations, [&] { group.all_reduce(data.data(), count); });
            if (group.rank() != 0) continue;
            const double copy_s = memcpy_seconds(bytes, iterations);
            std::printf("%8ld %6ld %10zu %14.2f %12.2f %14.2f %9.1fx\n", long(hidden), long(rows), bytes,
                        reduce_s * 1e6, double(bytes) / reduce_s / 1e9, copy_s * 1e6, reduce_s / copy_s);
        }
    }
    std::fflush(stdout);
}

int run_shared_memory(int num_ranks) {
    ShmProcessGroup::Options options;
    options.size = num_ranks;
    options.max_collective_bytes = 64 * 4096 * sizeof(float);
    options.max_message_bytes = 4096;
    std::vector<RankPlacement> placements = plan_placement(num_ranks, 1);
    if (oversubscribed(placements)) options.wait.spin_ns = 0;
    auto group = ShmProcessGroup::create(options);
    if (!group.ok()) return std::fprintf(stderr, "%s\n", group.error().message.c_str()), 1;
    const pid_t parent = getpid();
    std::vector<pid_t> children;
    for (int rank = 1; rank < num_ranks; ++rank) {
        pid_t pid = fork();  // before any thread exists: this tool starts no OpenMP before here
        if (pid == 0) {
            auto attached = ShmProcessGroup::attach(group.value()->fd(), rank, parent);
            if (!attached.ok()) _exit(1);
            (void)apply_placement(placements[size_t(rank)]);
            run_benchmarks(*attached.value(), "shared memory");
            _exit(0);
        }
        children.push_back(pid);
    }
    (void)apply_placement(placements[0]);
    run_benchmarks(*group.value(), "shared memory");
    for (pid_t child : children) waitpid(child, nullptr, 0);
    return 0;
}

int run_mpi() {
    auto world = init_mpi();
    if (!world.ok()) return std::fprintf(stderr, "%s\n", world.error().message.c_str()), 1;
    configure_threads(1);
    run_benchmarks(mpi_world_group(), "MPI");
    MPI_Finalize();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int num_ranks = 2;
    bool mpi = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--mpi") == 0)
            mpi = true;
        else if (std::strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
            num_ranks = std::max(2, std::atoi(argv[++i]));
        else
            return std::fprintf(stderr, "usage: %s [--ranks N] | --mpi (under mpirun)\n", argv[0]), 2;
    }
    return mpi ? run_mpi() : run_shared_memory(num_ranks);
}
