// Drives a ModelRunner directly (no scheduler): the tests of the execution
// core give each request its own blocks (deliberately out of order) and run
// prefill and decode steps themselves; and the greedy goldens they check.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/model_runner.h"

namespace lmrun::testing {

struct GreedyRequest {
    std::vector<int32_t> prompt_ids;
    int64_t max_new_tokens = 0;
    std::vector<int32_t> stop_token_ids;  // generation ends when one is sampled (not included)
};

std::unique_ptr<ModelRunner> make_runner(const std::string& model_dir, DType weight_dtype,
                                         const ModelRunnerConfig& config,
                                         const WeightQuantization& quantization = {},
                                         const PackedCacheOptions& packed_cache = {});

// Prefills every request (all in one step when `batch_prefill`, else one step each),
// then decodes all unfinished requests together, step by step.
std::vector<std::vector<int32_t>> run_greedy(ModelRunner& runner, const std::vector<GreedyRequest>& requests,
                                             bool batch_prefill = true);

// Blocks for `num_tokens` tokens, taken from the top of the cache downwards so that
// block ids are neither 0-based nor contiguous with another sequence's.
std::vector<int32_t> take_blocks(int64_t& next_block_from_top, int64_t num_tokens, int64_t block_size);

// A greedy golden of ../shared/testdata/MODEL/expected.json.
struct GoldenCase {
    std::string name;
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> output_ids;
    std::vector<int64_t> low_margin_steps;
};

std::vector<GoldenCase> load_cases(const std::string& model);
// stories260k follows llama2.c: generation stops when the model emits BOS (1).
std::vector<GreedyRequest> stories_requests(const std::vector<GoldenCase>& cases);
// Qwen goldens: exactly max_new_tokens tokens, no stop token.
std::vector<GreedyRequest> qwen_requests(const std::vector<GoldenCase>& cases);
// 8 sequences, 512-token steps and context, 64 MiB of KV.
ModelRunnerConfig small_config(int64_t block_size);
// small_config with 1024-token steps: all 7 prompts (621 tokens) are prefilled in one step.
ModelRunnerConfig batch_config(int64_t block_size);
void expect_all_golden(const std::vector<GoldenCase>& cases,
                       const std::vector<std::vector<int32_t>>& outputs);

}  // namespace lmrun::testing
