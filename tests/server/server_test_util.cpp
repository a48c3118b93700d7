#include "server_test_util.h"

#include <stdexcept>

#include "test_util.h"

namespace lmrun::server::testing {

std::vector<StoriesGolden> stories_goldens() {
    std::vector<StoriesGolden> goldens;
    // Held in a local: a range-for over read_json_file(...)["cases"] would iterate a destroyed temporary.
    const nlohmann::json expected =
        lmrun::testing::read_json_file(lmrun::testing::testdata_path("stories260k/expected.json"));
    for (const auto& item : expected["cases"]) {
        // The continuation as it reads after the prompt: run.c's stdout minus the prompt text.
        const std::string prompt_text = item["prompt_text"];
        const std::string full_text = item["decoded_text_prompt_plus_output"];
        goldens.push_back({item["name"], prompt_text, item["prompt_ids"].get<std::vector<int32_t>>(),
                           item["output_ids"].get<std::vector<int32_t>>(),
                           full_text.substr(prompt_text.size()), !item["stopped_on_token"].is_null()});
    }
    if (goldens.size() != 7) throw std::runtime_error("stories260k/expected.json: expected 7 cases");
    return goldens;
}

EngineConfig stories_engine_config() {
    EngineConfig config;
    config.model_dir = lmrun::testing::testdata_path("stories260k");
    config.dtype = "float32";
    config.num_threads = 1;
    config.runner.max_num_seqs = 8;
    config.runner.max_num_batched_tokens = 512;
    config.runner.max_model_len = 512;
    config.runner.block_size = 16;
    config.runner.kv_cache_memory_bytes = 32ll << 20;
    return config;
}

std::unique_ptr<LLMEngine> make_stories_engine() {
    auto engine = LLMEngine::create(stories_engine_config());
    if (!engine.ok()) throw std::runtime_error(engine.error().message);
    return std::move(engine).value();
}

SamplingParams golden_params(const StoriesGolden& golden) {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = int64_t(golden.output_ids.size()) + (golden.stopped_on_bos ? 1 : 0);
    params.stop_token_ids = {1};
    params.ignore_eos = true;
    return params;
}

}  // namespace lmrun::server::testing
