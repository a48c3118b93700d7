#include "cli/server_limits.h"

#include <sys/resource.h>

#include "core/logging.h"

namespace lmrun::cli {

Status fit_connections_to_file_limit(int& max_connections, bool given) {
    constexpr rlim_t kSpareFiles = 64;
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return ok_status();
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
    }
    if (limit.rlim_cur == RLIM_INFINITY || rlim_t(max_connections) + kSpareFiles <= limit.rlim_cur)
        return ok_status();
    if (given || limit.rlim_cur <= 2 * kSpareFiles) {
        return make_error(
            "--max-connections {} needs {} open files, but this process may open {} (ulimit -n)",
            max_connections, rlim_t(max_connections) + kSpareFiles, limit.rlim_cur);
    }
    const int fitting = int(limit.rlim_cur - kSpareFiles);
    log_warn("--max-connections {} lowered to {}: this process may open {} files (ulimit -n)",
             max_connections, fitting, limit.rlim_cur);
    max_connections = fitting;
    return ok_status();
}

}  // namespace lmrun::cli
