#include "core/file_times.h"

#include <sys/stat.h>

#include <ctime>

namespace lmrun {

void mark_used_now(int fd) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    const timespec times[2] = {now, now};
    futimens(fd, times);
}

}  // namespace lmrun
