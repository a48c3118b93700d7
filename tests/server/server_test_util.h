// Shared by the server's C++ tests: the stories260k engine and its goldens.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/llm_engine.h"

namespace lmrun::server::testing {

struct StoriesGolden {
    std::string name;
    std::string prompt_text;
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> output_ids;  // without the BOS that ended bos_only_full
    std::string output_text;
    bool stopped_on_bos = false;
};

std::vector<StoriesGolden> stories_goldens();
EngineConfig stories_engine_config();
std::unique_ptr<LLMEngine> make_stories_engine();
// Greedy, stop on BOS (llama2.c's convention), the golden's length.
SamplingParams golden_params(const StoriesGolden& golden);

}  // namespace lmrun::server::testing
