// `lmrun bench --compare-tensor-parallel`: the prefill and decode workloads on one process
// (-tp 1, every core to its OpenMP team) and on N ranks (-tp N, cores / N threads each), in
// alternating runs of the same process so that both see the same machine; medians of the
// runs and the ratio N ranks / one process, plus each rank's resident memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "engine/model_runner.h"

namespace lmrun::cli {

struct TensorParallelComparison {
    std::string model_dir;
    DType dtype = DType::BF16;
    ModelRunnerConfig runner;
    int tensor_parallel_size = 2;
    std::string backend = "mp";
    std::vector<int64_t> prompt_lens;
    std::vector<int64_t> decode_batches;
    int64_t decode_context = 128;
    int64_t decode_steps = 8;
    int64_t runs = 3;  // alternating runs of each side
};

// Prints the comparison table; returns it as JSON.
Result<nlohmann::json> compare_tensor_parallel(const TensorParallelComparison& comparison);

}  // namespace lmrun::cli
