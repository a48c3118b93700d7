#include "core/parallel.h"

#include <omp.h>
#include <sched.h>

#include <cstdlib>

namespace lmrun {

void configure_threads(int requested) {
    cpu_set_t allowed;
    int available = 1;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) available = CPU_COUNT(&allowed);
    int threads = requested > 0 ? requested : available;
    // Binding only takes effect if set before the OpenMP runtime starts its team.
    setenv("OMP_PROC_BIND", "close", 0);
    setenv("OMP_PLACES", "cores", 0);
    omp_set_num_threads(threads);
}

int num_threads() {
    return omp_get_max_threads();
}

}  // namespace lmrun
