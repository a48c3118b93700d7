#include "core/parallel.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace lmrun {
namespace {

// Binding only takes effect if set before the OpenMP runtime starts (libomp reads the
// environment when first called; libgomp already read it when it loaded).
void request_binding() {
    setenv("OMP_PROC_BIND", "close", 0);
    setenv("OMP_PLACES", "cores", 0);
}

}  // namespace

// This thread's own mask is not enough: when the process starts with OMP_PROC_BIND in its
// environment (set by the user, or inherited from an lmrun parent that called
// configure_threads), libgomp pins the initial thread to the first place as it loads, so the
// mask shows one core while the places still cover every allowed CPU.
int available_cpus() {
    request_binding();
    cpu_set_t allowed;
    int from_mask = 1;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) from_mask = CPU_COUNT(&allowed);
    int from_places = 0;
    if (omp_get_proc_bind() != omp_proc_bind_false) {
        for (int place = 0; place < omp_get_num_places(); ++place)
            from_places += omp_get_place_num_procs(place);
    }
    const int online = int(std::max(sysconf(_SC_NPROCESSORS_ONLN), 1L));
    return std::max(from_mask, std::min(from_places, online));
}

void configure_threads(int requested) {
    const int available = available_cpus();
    // More threads than CPUs only oversubscribes the pinned team, and a huge request (100000)
    // makes the OpenMP runtime fail to create them: requests are capped to the CPUs.
    int threads = requested > 0 ? std::min(requested, available) : available;
    omp_set_num_threads(threads);
}

int num_threads() {
    return omp_get_max_threads();
}

}  // namespace lmrun
