// Process and machine memory figures from /proc, for sizing the KV cache and
// for benchmark reports.
#pragma once

#include <cstdint>

namespace lmrun {

int64_t resident_memory_bytes();       // VmRSS of this process
int64_t peak_resident_memory_bytes();  // VmHWM of this process
int64_t available_memory_bytes();
// Makes VmHWM start again from the current resident size (Linux clear_refs).
void reset_peak_resident_memory();  // MemAvailable of the machine (or cgroup limit, if lower)

}  // namespace lmrun
