// The offline throughput workload of nano-vLLM's bench.py: N requests with
// random prompt and output lengths (ignore_eos), all submitted at once to the
// engine; reports generated tokens per second.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "engine/llm_engine.h"

namespace lmrun::cli {

struct OfflineWorkload {
    int64_t num_requests = 64;
    int64_t min_prompt_len = 100, max_prompt_len = 512;
    int64_t min_output_len = 100, max_output_len = 512;
    float temperature = 0.6f;
    uint64_t seed = 0;
};

struct OfflineResult {
    int64_t prompt_tokens = 0;
    int64_t output_tokens = 0;
    double seconds = 0;
    nlohmann::json to_json() const;
};

Result<OfflineResult> run_offline_workload(const EngineConfig& config, const OfflineWorkload& workload);

}  // namespace lmrun::cli
