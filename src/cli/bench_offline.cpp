#include "cli/bench_offline.h"

#include <random>

#include "core/timer.h"
#include "engine/progress_bar.h"

namespace lmrun::cli {

nlohmann::json OfflineResult::to_json() const {
    return {{"prompt_tokens", prompt_tokens},
            {"output_tokens", output_tokens},
            {"seconds", seconds},
            {"output_tokens_per_s", double(output_tokens) / seconds},
            {"total_tokens_per_s", double(prompt_tokens + output_tokens) / seconds}};
}

Result<OfflineResult> run_offline_workload(const EngineConfig& config, const OfflineWorkload& workload) {
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<LLMEngine> engine, LLMEngine::create(config));
    const int64_t vocab = engine->model_config().vocab_size;
    std::mt19937_64 rng(workload.seed);
    auto uniform = [&](int64_t low, int64_t high) { return low + int64_t(rng() % uint64_t(high - low + 1)); };
    OfflineResult result;
    for (int64_t i = 0; i < workload.num_requests; ++i) {
        std::vector<int32_t> prompt(
            static_cast<size_t>(uniform(workload.min_prompt_len, workload.max_prompt_len)));
        for (int32_t& id : prompt) id = int32_t(rng() % uint64_t(vocab));
        SamplingParams params;
        params.temperature = workload.temperature;
        params.ignore_eos = true;
        params.max_tokens = uniform(workload.min_output_len, workload.max_output_len);
        params.seed = workload.seed + uint64_t(i);
        result.prompt_tokens += int64_t(prompt.size());
        LMRUN_RETURN_IF_ERROR(engine->add_request("bench-" + std::to_string(i), std::move(prompt), params));
    }
    ProgressBar progress("Offline batch", workload.num_requests);
    Stopwatch timer;
    int64_t done = 0;
    while (engine->has_unfinished_requests()) {
        for (const RequestOutput& output : engine->step()) {
            ++done;
            result.output_tokens += int64_t(output.outputs[0].token_ids.size());
        }
        EngineStats stats = engine->stats();
        progress.update(done, stats.num_prompt_tokens_computed, stats.num_generation_tokens);
    }
    progress.finish();
    result.seconds = timer.elapsed_seconds();
    return result;
}

}  // namespace lmrun::cli
