// What rank 0 tells every other rank at start-up (the first message of the group, as JSON:
// sent once, so its format does not matter for speed): the model, the weight dtype and quantization, the
// runner's limits and, for the mp backend, where each rank runs.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "engine/model_runner.h"
#include "model/packed_cache_directory.h"
#include "model/quantization_config.h"
#include "parallel/placement.h"

namespace lmrun::parallel {

struct WorkerConfig {
    std::string model_dir;
    DType dtype = DType::BF16;
    WeightQuantization quantization;        // --quantization int8: every rank quantizes its shard
    PackedCacheOptions packed_cache;        // --packed-cache: every rank its own file there
    ModelRunnerConfig runner;               // resolved (max_model_len set)
    std::vector<RankPlacement> placements;  // by rank (mp); empty: each rank places itself (mpi)
    int threads_per_rank = 0;               // mpi: 0 = the node's CPUs / its ranks
};

std::string to_json(const WorkerConfig& config);
Result<WorkerConfig> worker_config_from_json(std::string_view text);

}  // namespace lmrun::parallel
