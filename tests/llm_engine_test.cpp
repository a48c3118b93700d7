// End-to-end tests of the engine (scheduler + block manager + runner + output
// processing) on stories260k: continuous batching, chunked prefill, preemption
// and prefix caching must all leave the golden greedy outputs unchanged.
#include "engine/llm_engine.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/llm.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

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

// The KV bound of preemption above is also the memory bound: the arena is reserved, not
// resident, at start; it is committed as blocks fill and never past the reservation, which
// is within --kv-cache-memory; preemption still happens when the blocks run out.
TEST(LLMEngine, KvResidentMemoryFollowsUseWithinTheBound) {
    auto goldens = stories_goldens();
    EngineConfig config = stories_config();
    const int64_t bytes_per_block = 2 * 5 * 16 * 4 * 8 * 4;
    config.runner.kv_cache_memory_bytes = 24 * bytes_per_block + bytes_per_block / 2;
    auto engine = make_engine(config);
    const KvCache& cache = engine->runner().kv_cache();
    EXPECT_EQ(cache.reserved_bytes(), 24 * bytes_per_block);
    EXPECT_LE(cache.reserved_bytes(), config.runner.kv_cache_memory_bytes);
    EXPECT_EQ(cache.resident_bytes(), 0);
    for (size_t i = 0; i < goldens.size(); ++i) {
        ASSERT_TRUE(
            engine->add_request("r" + std::to_string(i), goldens[i].prompt_ids, greedy_params(goldens[i]))
                .ok());
    }
    engine->step();
    const int64_t after_first_step = cache.resident_bytes();
    EXPECT_GT(after_first_step, 0);
    int64_t peak = after_first_step;
    while (engine->has_unfinished_requests()) {
        engine->step();
        const int64_t resident = cache.resident_bytes();
        EXPECT_LE(resident, cache.reserved_bytes());
        EXPECT_GE(resident, peak) << "pages stay committed once written";
        peak = std::max(peak, resident);
    }
    EXPECT_GT(peak, after_first_step) << "more blocks written, more memory resident";
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
    EXPECT_EQ(finished[0].outputs[0].token_ids.size(),
              13u);  // 20 + 12 fill both blocks; the 33rd needs a third
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
uint64_t colliding_hash(std::span<const int32_t>, uint64_t) {
    return 42;
}

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
        EXPECT_EQ(goldens[i].prompt_text + outputs.value()[i].outputs[0].text,
                  goldens[i].prompt_plus_output_text)
            << goldens[i].name;
    }
}

}  // namespace
}  // namespace lmrun::testing

namespace lmrun::testing {
namespace {

std::vector<int32_t> generate_ids(
    LLMEngine& engine, const std::vector<std::pair<std::vector<int32_t>, SamplingParams>>& requests,
    size_t which) {
    for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_TRUE(engine.add_request("r" + std::to_string(i), requests[i].first, requests[i].second).ok());
    }
    std::map<std::string, RequestOutput> outputs;
    while (engine.has_unfinished_requests()) {
        for (auto& output : engine.step()) outputs[output.request_id] = std::move(output);
    }
    return outputs["r" + std::to_string(which)].outputs.at(0).token_ids;
}

TEST(LLMEngineSampling, SeededRunsAreReproducibleAloneAndInABatch) {
    auto goldens = stories_goldens();
    SamplingParams seeded;
    seeded.temperature = 0.9f;
    seeded.top_p = 0.95f;
    seeded.max_tokens = 60;
    seeded.seed = 2024;
    auto engine = make_engine(stories_config());
    auto alone = generate_ids(*engine, {{goldens[2].prompt_ids, seeded}}, 0);
    auto again = generate_ids(*engine, {{goldens[2].prompt_ids, seeded}}, 0);
    EXPECT_EQ(alone, again);
    SamplingParams other = seeded;
    other.seed.reset();
    other.temperature = 1.2f;
    auto in_batch = generate_ids(*engine,
                                 {{goldens[3].prompt_ids, other},
                                  {goldens[2].prompt_ids, seeded},
                                  {goldens[4].prompt_ids, other},
                                  {goldens[0].prompt_ids, other}},
                                 1);
    EXPECT_EQ(alone, in_batch);
    SamplingParams reseeded = seeded;
    reseeded.seed = 2025;
    EXPECT_NE(alone, generate_ids(*engine, {{goldens[2].prompt_ids, reseeded}}, 0));
}

TEST(LLMEngineSampling, TopKOneEqualsGreedy) {
    auto goldens = stories_goldens();
    auto engine = make_engine(stories_config());
    SamplingParams top1;
    top1.temperature = 1.3f;
    top1.top_k = 1;
    top1.max_tokens = int64_t(goldens[3].output_ids.size());
    EXPECT_EQ(generate_ids(*engine, {{goldens[3].prompt_ids, top1}}, 0), goldens[3].output_ids);
}

TEST(LLMEngineSampling, StopStringsCutExactlyAcrossTokens) {
    auto goldens = stories_goldens();
    auto llm = LLM::create(stories_config());
    ASSERT_TRUE(llm.ok());
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 100;
    // bos_only_200 reads "Once upon a time, there was a little girl named Lily. She loved to play ..."
    params.stop = {"little gi", "zzz"};
    std::string streamed;
    auto outputs = llm.value()->generate({Prompt::from_ids({1})}, params, GenerateOptions{false, true});
    ASSERT_TRUE(outputs.ok());
    const CompletionOutput& completion = outputs.value()[0].outputs[0];
    EXPECT_EQ(completion.text, "Once upon a time, there was a ");
    EXPECT_EQ(completion.finish_reason, FinishReason::Stop);
    EXPECT_EQ(completion.stop_reason, StopReason(std::string("little gi")));

    // The stream shows exactly the same text, never a piece of the stop string.
    LLMEngine& engine = llm.value()->engine();
    ASSERT_TRUE(
        engine
            .add_request("stream", {1}, params, [&](const CompletionDelta& delta) { streamed += delta.text; })
            .ok());
    while (engine.has_unfinished_requests()) engine.step();
    EXPECT_EQ(streamed, completion.text);
}

TEST(LLMEngineSampling, StreamedDeltasConcatenateToTheFinalText) {
    auto goldens = stories_goldens();
    auto engine = make_engine(stories_config());
    SamplingParams params;
    params.temperature = 0.8f;
    params.seed = 7;
    params.max_tokens = 80;
    std::string streamed;
    std::vector<int32_t> streamed_ids;
    ASSERT_TRUE(engine
                    ->add_request("s", goldens[5].prompt_ids, params,
                                  [&](const CompletionDelta& delta) {
                                      streamed += delta.text;
                                      streamed_ids.insert(streamed_ids.end(), delta.token_ids.begin(),
                                                          delta.token_ids.end());
                                  })
                    .ok());
    std::vector<RequestOutput> finished;
    while (engine->has_unfinished_requests()) {
        for (auto& output : engine->step()) finished.push_back(std::move(output));
    }
    ASSERT_EQ(finished.size(), 1u);
    EXPECT_EQ(streamed, finished[0].outputs[0].text);
    EXPECT_EQ(streamed_ids, finished[0].outputs[0].token_ids);
    EXPECT_FALSE(streamed.empty());
}

TEST(LLMEngineSampling, ParallelSamplesShareThePromptAndDiffer) {
    auto goldens = stories_goldens();
    auto engine = make_engine(stories_config());
    SamplingParams params;
    params.temperature = 1.0f;
    params.n = 3;
    params.seed = 5;
    params.max_tokens = 30;
    params.logprobs = 2;
    std::vector<int32_t> prompt = goldens[0].prompt_ids;
    prompt.insert(prompt.end(), goldens[0].output_ids.begin(), goldens[0].output_ids.begin() + 60);
    ASSERT_TRUE(engine->add_request("n3", prompt, params).ok());
    std::vector<RequestOutput> finished;
    while (engine->has_unfinished_requests()) {
        for (auto& output : engine->step()) finished.push_back(std::move(output));
    }
    ASSERT_EQ(finished.size(), 1u);
    ASSERT_EQ(finished[0].outputs.size(), 3u);
    for (const auto& completion : finished[0].outputs) {
        EXPECT_EQ(completion.token_ids.size(), 30u);
        ASSERT_EQ(completion.logprobs.size(), 30u);
        EXPECT_EQ(completion.logprobs[0].top.size(), 2u);
        EXPECT_LE(completion.logprobs[0].logprob, 0.0f);
    }
    EXPECT_NE(finished[0].outputs[0].token_ids, finished[0].outputs[1].token_ids);
    EXPECT_NE(finished[0].outputs[1].token_ids, finished[0].outputs[2].token_ids);
    // The later samples found the first one's full prompt blocks (61 tokens: 3 blocks of 16) in the cache.
    EXPECT_EQ(engine->stats().prefix_cache_hits, 2 * 3);
}

TEST(LLMEngineSampling, InvalidRequestsAreRejectedWithTheFieldNamed) {
    auto engine = make_engine(stories_config());
    SamplingParams params;
    params.top_p = 1.5f;
    Status bad_top_p = engine->add_request("a", {1, 2}, params);
    ASSERT_FALSE(bad_top_p.ok());
    EXPECT_NE(bad_top_p.error().message.find("top_p"), std::string::npos);
    Status empty = engine->add_request("b", {}, SamplingParams{});
    ASSERT_FALSE(empty.ok());
    Status out_of_vocab = engine->add_request("c", {1, 600}, SamplingParams{});
    ASSERT_FALSE(out_of_vocab.ok());
    EXPECT_NE(out_of_vocab.error().message.find("600"), std::string::npos);
    Status too_long = engine->add_request("d", std::vector<int32_t>(512, 5), SamplingParams{});
    ASSERT_FALSE(too_long.ok());
    EXPECT_FALSE(engine->has_unfinished_requests());  // nothing reached the scheduler
}

// A prompt of max_model_len tokens leaves no room for a token: refused, as vLLM's server does;
// one token less is accepted and generates exactly one token.
TEST(LLMEngine, PromptLengthBoundaryLeavesRoomForOneToken) {
    auto engine = make_engine(stories_config());  // max_model_len 512
    ASSERT_EQ(engine->max_model_len(), 512);
    SamplingParams params;
    params.max_tokens = 16;
    params.ignore_eos = true;
    Status full = engine->add_request("full", std::vector<int32_t>(512, 5), params);
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.error().subject, "prompt");
    EXPECT_NE(full.error().message.find("maximum context length is 512"), std::string::npos);
    ASSERT_TRUE(engine->add_request("room", std::vector<int32_t>(511, 5), params).ok());
    std::vector<RequestOutput> finished;
    while (engine->has_unfinished_requests()) {
        for (auto& output : engine->step()) finished.push_back(std::move(output));
    }
    ASSERT_EQ(finished.size(), 1u);
    EXPECT_EQ(finished[0].outputs[0].token_ids.size(), 1u);
    EXPECT_EQ(finished[0].outputs[0].finish_reason, FinishReason::Length);
}

// stories260k with another eos_token_id in config.json (the weights and tokenizer are linked).
std::string stories_with_eos(int32_t eos_token_id) {
    const std::string dir = make_temp_dir("stories_eos_" + std::to_string(eos_token_id));
    for (const char* name : {"model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
        std::filesystem::create_symlink(testdata_path(std::string("stories260k/") + name), dir + "/" + name);
    }
    nlohmann::json config = read_json_file(testdata_path("stories260k/config.json"));
    config["eos_token_id"] = eos_token_id;
    std::ofstream(dir + "/config.json") << config.dump();
    return dir;
}

CompletionOutput generate_one(LLMEngine& engine, const std::vector<int32_t>& prompt,
                              const SamplingParams& params) {
    EXPECT_TRUE(engine.add_request("one", prompt, params).ok());
    std::vector<RequestOutput> finished;
    while (engine.has_unfinished_requests()) {
        for (auto& output : engine.step()) finished.push_back(std::move(output));
    }
    EXPECT_EQ(finished.size(), 1u);
    return finished.empty() ? CompletionOutput{} : finished[0].outputs.at(0);
}

// vLLM's stop_reason: null for EOS and length, the string for a stop string, the token id only
// for a stop_token_ids entry.
TEST(LLMEngine, StopReasonNamesOnlyStopStringsAndStopTokenIds) {
    const Golden golden = stories_goldens()[1];  // bos_only_full: the story ends with token 1
    ASSERT_EQ(golden.name, "bos_only_full");
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 400;

    EngineConfig eos_config = stories_config();
    eos_config.model_dir = stories_with_eos(1);
    eos_config.tokenizer_dir = eos_config.model_dir;
    auto eos_engine = make_engine(eos_config);
    CompletionOutput eos = generate_one(*eos_engine, golden.prompt_ids, params);
    EXPECT_EQ(eos.finish_reason, FinishReason::Stop);
    EXPECT_EQ(without_stop(eos.token_ids), golden.output_ids);
    EXPECT_EQ(eos.stop_reason, StopReason());

    auto engine = make_engine(stories_config());
    SamplingParams stop_token = params;
    stop_token.stop_token_ids = {1};
    CompletionOutput token = generate_one(*engine, golden.prompt_ids, stop_token);
    EXPECT_EQ(token.finish_reason, FinishReason::Stop);
    EXPECT_EQ(without_stop(token.token_ids), golden.output_ids);
    EXPECT_EQ(token.stop_reason, StopReason(int32_t(1)));

    SamplingParams stop_string = params;
    stop_string.stop = {"Lily"};
    CompletionOutput string = generate_one(*engine, golden.prompt_ids, stop_string);
    EXPECT_EQ(string.finish_reason, FinishReason::Stop);
    EXPECT_EQ(string.stop_reason, StopReason(std::string("Lily")));

    SamplingParams length = params;
    length.max_tokens = 5;
    CompletionOutput capped = generate_one(*engine, golden.prompt_ids, length);
    EXPECT_EQ(capped.finish_reason, FinishReason::Length);
    EXPECT_EQ(capped.stop_reason, StopReason());
}

// n > 1: a prompt that cannot run is refused whole (no completion is queued, the id stays
// free); LLM::generate refuses the batch and leaves no request behind; an abort before the
// other completions started ends every completion, each reported once.
TEST(LLMEngine, ParallelSamplesOfAFailingPrompt) {
    auto engine = make_engine(stories_config());
    SamplingParams params;
    params.n = 3;
    params.max_tokens = 8;
    params.ignore_eos = true;
    Status refused = engine->add_request("n3", std::vector<int32_t>(600, 5), params);
    ASSERT_FALSE(refused.ok());
    EXPECT_FALSE(engine->has_unfinished_requests());

    std::vector<CompletionDelta> deltas;
    ASSERT_TRUE(engine
                    ->add_request("n3", {1, 403, 407}, params,
                                  [&](const CompletionDelta& delta) { deltas.push_back(delta); })
                    .ok());
    EXPECT_TRUE(engine->abort_request("n3"));
    EXPECT_FALSE(engine->has_unfinished_requests());
    ASSERT_EQ(deltas.size(), 3u);
    for (int32_t index = 0; index < 3; ++index) {
        EXPECT_EQ(deltas[size_t(index)].index, index);
        EXPECT_TRUE(deltas[size_t(index)].finished);
        EXPECT_EQ(deltas[size_t(index)].finish_reason, FinishReason::Abort);
    }
    EXPECT_TRUE(engine->step().empty());
    EXPECT_EQ(engine->block_manager().num_free_blocks(), engine->block_manager().num_blocks());

    auto llm = LLM::create(stories_config());
    ASSERT_TRUE(llm.ok());
    auto outputs =
        llm.value()->generate({Prompt::from_ids({1, 403}), Prompt::from_ids(std::vector<int32_t>(512, 5))},
                              params, GenerateOptions{false, true});
    ASSERT_FALSE(outputs.ok());
    EXPECT_NE(outputs.error().message.find("prompt 1"), std::string::npos) << outputs.error().message;
    EXPECT_FALSE(llm.value()->engine().has_unfinished_requests());
    auto retry = llm.value()->generate({Prompt::from_ids({1, 403})}, params, GenerateOptions{false, true});
    ASSERT_TRUE(retry.ok());
    ASSERT_EQ(retry.value()[0].outputs.size(), 3u);
    for (const CompletionOutput& completion : retry.value()[0].outputs)
        EXPECT_EQ(completion.token_ids.size(), 8u);
}

}  // namespace
}  // namespace lmrun::testing
