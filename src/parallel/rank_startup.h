// How every rank of a tensor-parallel group starts, in lockstep: load this rank's shard of the
// weights, report; build the ModelRunner (the ranks agree on the KV block count), report. Rank 0
// gathers the reports and the first failure, naming its rank, becomes every rank's result:
// a bad checkpoint shard on rank 1 surfaces on rank 0 as "rank 1: FILE: ...". A rank that
// dies instead of reporting fails the group (its other ranks' waits give up).
#pragma once

#include <memory>

#include "core/result.h"
#include "engine/model_runner.h"
#include "parallel/executor.h"
#include "parallel/process_group.h"
#include "parallel/worker_config.h"

namespace lmrun::parallel {

// What every rank starts from, out of the executor's config: the model, its dtype, quantization
// and packed-weight cache, and the runner config resolved against `model` (max_model_len set).
// `ranks_sharing_memory`: the ranks on this machine, which share its memory budget.
Result<WorkerConfig> worker_config_for(const ExecutorConfig& config, const ModelConfig& model,
                                       int ranks_sharing_memory);

// Loads this rank's shard of the model and logs what it loaded (and, when `load_seconds` is
// given, stores how long that took there); packed_cache as in CausalLM::load.
Result<std::unique_ptr<CausalLM>> load_rank_model(const std::string& model_dir, DType dtype,
                                                  const WeightQuantization& quantization,
                                                  const ParallelConfig& parallel,
                                                  double* load_seconds = nullptr,
                                                  const PackedCacheOptions& packed_cache = {});

// Every rank calls this with the same config (rank 0 after broadcasting it). `load_seconds`:
// as in load_rank_model.
Result<std::unique_ptr<ModelRunner>> start_rank(ProcessGroup& group, const WorkerConfig& config,
                                                double* load_seconds = nullptr);

// Every rank's `local` status in, the same verdict out on every rank: ok, or the lowest
// failing rank's error prefixed with "rank R: " (kind and subject kept).
Status agree_on_status(ProcessGroup& group, const Status& local);

}  // namespace lmrun::parallel
