// The machine's own limits, measured in the same run as the workloads they bound, so each
// throughput can be reported as a fraction of what this machine (and its current load) allows.
#pragma once

#include <cstdint>

namespace lmrun::cli {

struct MachineLimits {
    double read_bytes_per_s = 0;    // streaming read, every thread, several streams per thread
    double gemm_flops_per_s = 0;    // best large BF16 GEMM through the engine's linear kernels
    double onednn_flops_per_s = 0;  // the same GEMM through oneDNN alone
};

// buffer_bytes should be well beyond the last-level cache.
double measure_read_bandwidth(int64_t buffer_bytes = int64_t(1) << 30, int repeats = 5);
// A 512 x 4096 x 4096 BF16 GEMM; the best of `repeats` calls (as for the bandwidth).
void measure_gemm_peak(MachineLimits& limits, int repeats = 5);
MachineLimits measure_machine_limits();

// Lower bound on the time of one forward pass over `rows` rows: every weight byte is read once
// (bytes / bandwidth) and every multiply-add is done (2 · params · rows / GEMM peak), whichever
// takes longer.
double roofline_seconds(const MachineLimits& limits, double weight_bytes, double flops);

}  // namespace lmrun::cli
