// Shared by the engine tests (single process and tensor-parallel): the stories260k greedy
// goldens as engine requests, a small engine configuration, and a driver that adds requests
// at chosen steps (continuous batching with staggered arrivals) and runs to the end.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/llm_engine.h"

namespace lmrun::testing {

struct Golden {
    std::string name;
    std::string prompt_text;
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> output_ids;
    std::string prompt_plus_output_text;  // what llama2.c printed: prompt, then the continuation
};

std::vector<Golden> stories_goldens();
// stories260k in F32, 8 sequences, 512-token steps and context, blocks of 16, 32 MiB of KV.
EngineConfig stories_config();
// stories_config() split over tensor_parallel_size ranks on the given executor backend.
EngineConfig stories_config_on_ranks(int tensor_parallel_size, const std::string& backend = "mp");
// llama2.c's convention: BOS (1) ends a story; every other case ends at its golden length.
SamplingParams greedy_params(const Golden& golden);
// Golden ids, without the BOS that ended bos_only_full.
std::vector<int32_t> without_stop(std::vector<int32_t> ids);
std::unique_ptr<LLMEngine> make_engine(const EngineConfig& config);
// Adds request i at step arrival_steps[i]; runs until all finish.
std::map<std::string, RequestOutput> run_staggered(LLMEngine& engine, const std::vector<Golden>& goldens,
                                                   const std::vector<int>& arrival_steps);
void expect_goldens(const std::vector<Golden>& goldens, std::map<std::string, RequestOutput>& outputs);

// Arrival steps of the 7 goldens in the staggered tests.
inline const std::vector<int> kArrivals = {0, 0, 3, 10, 11, 40, 90};

}  // namespace lmrun::testing
