#include "engine_test_util.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "test_util.h"

namespace lmrun::testing {

std::vector<Golden> stories_goldens() {
    std::vector<Golden> goldens;
    const nlohmann::json expected = read_json_file(testdata_path("stories260k/expected.json"));
    for (const auto& item : expected["cases"]) {
        goldens.push_back({item["name"], item["prompt_text"], item["prompt_ids"].get<std::vector<int32_t>>(),
                           item["output_ids"].get<std::vector<int32_t>>(),
                           item["decoded_text_prompt_plus_output"]});
    }
    return goldens;
}

EngineConfig stories_config() {
    EngineConfig config;
    config.model_dir = testdata_path("stories260k");
    config.dtype = "float32";
    config.runner.max_num_seqs = 8;
    config.runner.max_num_batched_tokens = 512;
    config.runner.max_model_len = 512;
    config.runner.block_size = 16;
    config.runner.kv_cache_memory_bytes = 32ll << 20;
    return config;
}

EngineConfig stories_config_on_ranks(int tensor_parallel_size, const std::string& backend) {
    EngineConfig config = stories_config();
    config.tensor_parallel_size = tensor_parallel_size;
    config.distributed_executor_backend = backend;
    return config;
}

SamplingParams greedy_params(const Golden& golden) {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = int64_t(golden.output_ids.size()) + (golden.name == "bos_only_full" ? 1 : 0);
    params.stop_token_ids = {1};
    params.ignore_eos = true;
    return params;
}

std::vector<int32_t> without_stop(std::vector<int32_t> ids) {
    if (!ids.empty() && ids.back() == 1) ids.pop_back();
    return ids;
}

std::unique_ptr<LLMEngine> make_engine(const EngineConfig& config) {
    auto engine = LLMEngine::create(config);
    if (!engine.ok()) throw std::runtime_error(engine.error().message);
    return std::move(engine).value();
}

std::map<std::string, RequestOutput> run_staggered(LLMEngine& engine, const std::vector<Golden>& goldens,
                                                   const std::vector<int>& arrival_steps) {
    std::map<std::string, RequestOutput> outputs;
    for (int step = 0; outputs.size() < goldens.size(); ++step) {
        for (size_t i = 0; i < goldens.size(); ++i) {
            if (arrival_steps[i] == step) {
                EXPECT_TRUE(
                    engine.add_request(goldens[i].name, goldens[i].prompt_ids, greedy_params(goldens[i]))
                        .ok());
            }
        }
        for (RequestOutput& output : engine.step()) outputs[output.request_id] = std::move(output);
        if (step > 5000) break;
    }
    return outputs;
}

void expect_goldens(const std::vector<Golden>& goldens, std::map<std::string, RequestOutput>& outputs) {
    ASSERT_EQ(outputs.size(), goldens.size());
    for (const Golden& golden : goldens) {
        const CompletionOutput& completion = outputs[golden.name].outputs.at(0);
        EXPECT_EQ(without_stop(completion.token_ids), golden.output_ids) << golden.name;
    }
}

}  // namespace lmrun::testing
