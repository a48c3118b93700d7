// The machine's own limits, measured in the same run as the workloads they bound, so each
// throughput can be reported as a fraction of what this machine (and its current load) allows.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace lmrun::cli {

struct MachineLimits {
    double read_bytes_per_s = 0;  // streaming read, every thread, several streams per thread
    // Best large GEMM through the engine's linear kernels, with the model's weight storage
    // (BF16: whichever of our GEMM, AMX, oneDNN or, on AVX2, the F32-FMA GEMV the dispatch picks;
    // I8: the W8A8 kernels, counting each int8 multiply-add as 2 ops).
    double gemm_flops_per_s = 0;
    double onednn_flops_per_s = 0;  // the same BF16 GEMM through oneDNN alone (0: no oneDNN kernel here)
};

// buffer_bytes should be well beyond the last-level cache.
double measure_read_bandwidth(int64_t buffer_bytes = int64_t(1) << 30, int repeats = 5);
// A 512 x 4096 x 4096 GEMM with weights stored as `storage` (BF16 or I8); the best of `repeats`
// calls (as for the bandwidth).
void measure_gemm_peak(MachineLimits& limits, DType storage, int repeats = 5);
MachineLimits measure_machine_limits(DType weight_storage);

// Lower bound on the time of one forward pass over `rows` rows: every weight byte is read once
// (bytes / bandwidth) and every multiply-add is done (2 · params · rows / GEMM peak), whichever
// takes longer.
double roofline_seconds(const MachineLimits& limits, double weight_bytes, double flops);

}  // namespace lmrun::cli
