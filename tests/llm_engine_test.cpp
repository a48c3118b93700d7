// End-to-end tests of the engine (scheduler + block manager + runner + output
// processing) on stories260k: continuous batching, chunked prefill, preemption
// and prefix caching must all leave the golden greedy outputs unchanged.
#include "engine/llm_engine.h"

#include <gtest/gtest.h>

#include "engine/llm.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

struct Golden {
    std::string name;
    std::string prompt_text;
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> output_ids;
    std::string prompt_plus_output_text;  // what llama2.c printed: prompt, then the continuation
};

std::vector<Golden> stories_goldens() {
    std::vector<Golden> goldens;
    const nlohmann::json expected = read_json_file(testdata_path("stories260k/expected.json"));
    for (const auto& item : expected["cases"]) {
        goldens.push_back({item["name"], item["prompt_text"], item["prompt_ids"].get<std::vector<int32_t>>(),
                           item["output_ids"].get<std::vector<int32_t>>(), item["decoded_text_prompt_plus_output"]});
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

// llama2.c's convention: BOS (1) ends a story; every other case ends at its golden length.
SamplingParams greedy_params(const Golden& golden) {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = int64_t(golden.output_ids.size()) + (golden.name == "bos_only_full" ? 1 : 0);
    params.stop_token_ids = {1};
    params.ignore_eos = true;
    return params;
}

// Golden ids, without the BOS that ended bos_only_full.
std::vector<int32_t> without_stop(std::vector<int32_t> ids) {
    if (!ids.empty() && ids.back() == 1) ids.pop_back();
    return ids;
}

std::unique_ptr<LLMEngine> make_engine(const EngineConfig& config) {
    auto engine = LLMEngine::create(config);
    if (!engine.ok()) throw std::runtime_error(engine.error().message);
    return std::move(engine).value();
}

// Adds request i at step arrival_steps[i]; runs until all finish.
std::map<std::string, RequestOutput> run_staggered(LLMEngine& engine, const std::vector<Golden>& goldens,
                                                   const std::vector<int>& arrival_steps) {
    std::map<std::string, RequestOutput> outputs;
    for (int step = 0; outputs.size() < goldens.size(); ++step) {
        for (size_t i = 0; i < goldens.size(); ++i) {
            if (arrival_steps[i] == step) {
                EXPECT_TRUE(engine.add_request(goldens[i].name, goldens[i].prompt_ids, greedy_params(goldens[i])).ok());
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

const std::vector<int> kArrivals = {0, 0, 3, 10, 11, 40, 90};

TEST(LLMEngine, ContinuousBatchingWithStaggeredArrivals) {
    auto goldens = stories_goldens();
    auto engine = make_engine(stories_config());
    auto outputs = run_staggered(*engine, goldens, kArrivals);
    expect_goldens(goldens, outputs);
    EXPECT_EQ(engine->block_manager().num_free_blocks(), engine->block_manager().num_blocks());
}

TEST(LLMEngine, ChunkedPrefillWithTinyTokenBudget) {
    auto goldens = stories_goldens();
    EngineConfig config = stories_config();
    config.runner.max_num_batched_tokens = 8;  // every prompt of more than 8 tokens is chunked
    auto engine = make_engine(config);
    auto outputs = run_staggered(*engine, goldens, kArrivals);
    expect_goldens(goldens, outputs);
}

TEST(LLMEngine, PreemptionWhenKvBlocksRunOut) {
    auto goldens = stories_goldens();
    EngineConfig config = stories_config();
    // 24 blocks of 16 tokens: fewer than the 7 requests need together (each needs 8-22).
    const int64_t bytes_per_block = 2 * 5 * 16 * 4 * 8 * 4;
    config.runner.kv_cache_memory_bytes = 24 * bytes_per_block;
    auto engine = make_engine(config);
    auto outputs = run_staggered(*engine, goldens, kArrivals);
    expect_goldens(goldens, outputs);
    EXPECT_GT(engine->stats().num_preemptions, 0);
}

TEST(LLMEngine, SequenceTooLargeForTheCacheFailsWithAMessage) {
    EngineConfig config = stories_config();
    config.runner.kv_cache_memory_bytes = 2 * (2 * 5 * 16 * 4 * 8 * 4);  // 2 blocks = 32 tokens
    auto engine = make_engine(config);
    SamplingParams params;
    params.max_tokens = 40;
    params.ignore_eos = true;
    // A prompt that can never fit is refused before it is queued.
    Status refused = engine->add_request("big", std::vector<int32_t>(40, 300), params);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("KV blocks"), std::string::npos) << refused.error().message;
    // One that fits but outgrows the whole cache while decoding fails, instead of waiting forever.
    ASSERT_TRUE(engine->add_request("grows", std::vector<int32_t>(20, 300), params).ok());
    std::vector<RequestOutput> finished;
    for (int step = 0; step < 100 && finished.empty(); ++step) finished = engine->step();
    ASSERT_EQ(finished.size(), 1u);
    EXPECT_EQ(finished[0].outputs[0].finish_reason, FinishReason::Error);
    EXPECT_EQ(finished[0].outputs[0].token_ids.size(), 13u);  // 20 + 12 fill both blocks; the 33rd needs a third
    EXPECT_NE(finished[0].outputs[0].error_message.find("KV blocks"), std::string::npos)
        << finished[0].outputs[0].error_message;
    EXPECT_EQ(engine->block_manager().num_free_blocks(), 2);
}

TEST(LLMEngine, PrefixCachingReusesBlocksAndKeepsOutputs) {
    auto goldens = stories_goldens();
    const Golden& golden = goldens[0];  // bos_only_200
    // A long shared prefix: the prompt plus its first 100 golden tokens.
    std::vector<int32_t> long_prompt = golden.prompt_ids;
    long_prompt.insert(long_prompt.end(), golden.output_ids.begin(), golden.output_ids.begin() + 100);
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 50;
    params.ignore_eos = true;
    auto run = [&](bool caching, int64_t& computed, int64_t& hits) {
        EngineConfig config = stories_config();
        config.enable_prefix_caching = caching;
        auto engine = make_engine(config);
        std::vector<std::vector<int32_t>> outputs;
        for (const char* id : {"first", "second"}) {
            EXPECT_TRUE(engine->add_request(id, long_prompt, params).ok());
            while (engine->has_unfinished_requests()) {
                for (auto& output : engine->step()) outputs.push_back(output.outputs[0].token_ids);
            }
        }
        computed = engine->stats().num_prompt_tokens_computed;
        hits = engine->stats().prefix_cache_hits;
        return outputs;
    };
    int64_t computed_cached = 0, hits_cached = 0, computed_plain = 0, hits_plain = 0;
    auto cached = run(true, computed_cached, hits_cached);
    auto plain = run(false, computed_plain, hits_plain);
    ASSERT_EQ(cached.size(), 2u);
    EXPECT_EQ(cached[0], cached[1]);
    EXPECT_EQ(cached, plain);
    std::vector<int32_t> expected(golden.output_ids.begin() + 100, golden.output_ids.begin() + 150);
    EXPECT_EQ(cached[0], expected);
    EXPECT_EQ(hits_cached, 101 / 16);  // every full block of the prompt, from the first request's KV
    EXPECT_EQ(hits_plain, 0);
    EXPECT_EQ(computed_plain, 2 * 101);
    EXPECT_EQ(computed_cached, 101 + (101 - 6 * 16));
}

// Every block hashes the same: only the token comparison can keep requests apart.
uint64_t colliding_hash(std::span<const int32_t>, uint64_t) { return 42; }

TEST(LLMEngine, ForcedHashCollisionsDoNotShareWrongKv) {
    auto goldens = stories_goldens();
    EngineConfig config = stories_config();
    config.block_hash_fn = &colliding_hash;
    auto engine = make_engine(config);
    // Sequential requests: each finds the previous one's cached blocks under the same hash.
    for (const Golden& golden : goldens) {
        ASSERT_TRUE(engine->add_request(golden.name, golden.prompt_ids, greedy_params(golden)).ok());
        std::vector<RequestOutput> finished;
        while (engine->has_unfinished_requests()) {
            for (auto& output : engine->step()) finished.push_back(std::move(output));
        }
        ASSERT_EQ(finished.size(), 1u);
        EXPECT_EQ(without_stop(finished[0].outputs[0].token_ids), golden.output_ids) << golden.name;
    }
}

TEST(LLM, TextPromptsReproduceGoldenText) {
    auto goldens = stories_goldens();
    auto llm = LLM::create(stories_config());
    ASSERT_TRUE(llm.ok()) << llm.error().message;
    std::vector<Prompt> prompts;
    std::vector<SamplingParams> params;
    for (const Golden& golden : goldens) {
        prompts.push_back(Prompt::from_text(golden.prompt_text));
        params.push_back(greedy_params(golden));
    }
    auto outputs = llm.value()->generate(prompts, params, GenerateOptions{false, true});
    ASSERT_TRUE(outputs.ok()) << outputs.error().message;
    for (size_t i = 0; i < goldens.size(); ++i) {
        EXPECT_EQ(outputs.value()[i].prompt_token_ids, goldens[i].prompt_ids) << goldens[i].name;
        // The continuation is decoded in the context of the prompt, so it joins the prompt seamlessly.
        EXPECT_EQ(goldens[i].prompt_text + outputs.value()[i].outputs[0].text, goldens[i].prompt_plus_output_text)
            << goldens[i].name;
    }
}

}  // namespace
}  // namespace lmrun::testing
