// Threading: one OpenMP team, shared with oneDNN (which Debian builds against
// libgomp), so our loops and its GEMMs never oversubscribe the cores.
// configure_threads() pins the team to cores once, before the first parallel region.
#pragma once

#include <omp.h>

#include <cstdint>

namespace lmrun {

// Sets the number of threads (0 = one per available core; more than the available cores
// are capped to them) and binds them to cores.
void configure_threads(int num_threads);
int num_threads();
// The CPUs this process may run on (also when the OpenMP runtime already pinned this thread
// to one core); asks the runtime to bind, as configure_threads does.
int available_cpus();

// Inside a parallel region: fn(begin, end) on the calling thread's contiguous share of [0, count)
// (nothing when the share is empty).
template <typename Fn>
void run_thread_share(int64_t count, Fn&& fn) {
    const int64_t threads = omp_get_num_threads();
    const int64_t thread = omp_get_thread_num();
    const int64_t begin = count * thread / threads;
    const int64_t end = count * (thread + 1) / threads;
    if (begin < end) fn(begin, end);
}

// Splits [0, count) into contiguous chunks, one per thread; fn(begin, end). With one thread
// (e.g. a tensor-parallel rank per core) it calls fn directly: libgomp allocates a new team
// for every one-thread parallel region, which a decode step must not do.
template <typename Fn>
void parallel_for(int64_t count, Fn&& fn) {
    if (count <= 0) return;
    if (omp_get_max_threads() == 1) return fn(int64_t(0), count);
#pragma omp parallel
    run_thread_share(count, fn);
}

// Two phases in one parallel region: prepare(begin, end) over [0, prepare_count), then, once
// every thread's part of it is done, fn(begin, end) over [0, count), each split as parallel_for
// splits. For a kernel whose input every thread reads whole (a GEMM's x, converted once per call)
// but which can convert it in parts: the conversion no longer runs on one thread while the
// others wait at the region's start.
template <typename Prepare, typename Fn>
void parallel_for_after(int64_t prepare_count, Prepare&& prepare, int64_t count, Fn&& fn) {
    if (omp_get_max_threads() == 1) {
        if (prepare_count > 0) prepare(int64_t(0), prepare_count);
        if (count > 0) fn(int64_t(0), count);
        return;
    }
#pragma omp parallel
    {
        run_thread_share(prepare_count, prepare);
#pragma omp barrier
        run_thread_share(count, fn);
    }
}

}  // namespace lmrun
