#include "core/parallel.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>

namespace lmrun {

void configure_threads(int requested) {
    cpu_set_t allowed;
    int available = 1;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) available = CPU_COUNT(&allowed);
    // More threads than CPUs only oversubscribes the pinned team, and a huge request (100000)
    // makes the OpenMP runtime fail to create them: requests are capped to the CPUs.
    int threads = requested > 0 ? std::min(requested, std::max(available, 1)) : available;
    // Binding only takes effect if set before the OpenMP runtime starts its team.
    setenv("OMP_PROC_BIND", "close", 0);
    setenv("OMP_PLACES", "cores", 0);
    omp_set_num_threads(threads);
}

int num_threads() {
    return omp_get_max_threads();
}

}  // namespace lmrun
