// The KV tier below RAM in the engine: an engine restarted on the same --kv-offload-dir
// loads the prompt's blocks instead of computing them and answers bit-identically; damaged
// or foreign blocks are misses; the directory keeps its bound; bad configurations are refused.
#include "engine/kv_offload.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/kv_disk_store.h"
#include "engine_test_util.h"
#include "test_util.h"

namespace lmrun {
namespace {

namespace fs = std::filesystem;
using testing::Golden;
using testing::kv_block_files;
using testing::make_engine;
using testing::make_temp_dir;
using testing::stories_config;
using testing::stories_goldens;
using testing::testdata_path;

EngineConfig qwen3_tiny_offload_config() {
    EngineConfig config;
    config.model_dir = testdata_path("qwen3-tiny");
    config.runner.max_num_seqs = 4;
    config.runner.max_num_batched_tokens = 256;
    config.runner.max_model_len = 512;
    config.runner.block_size = 16;
    config.runner.kv_cache_memory_bytes = 32ll << 20;
    return config;
}

struct TierCase {
    std::string name;
    EngineConfig (*config)();
};

std::vector<int32_t> long_prompt(const std::string& model_name) {
    // stories: a golden prompt and 100 of its golden tokens; qwen3-tiny: 101 arbitrary ids.
    if (model_name == "stories260k") {
        const Golden golden = stories_goldens()[0];
        std::vector<int32_t> prompt = golden.prompt_ids;
        prompt.insert(prompt.end(), golden.output_ids.begin(), golden.output_ids.begin() + 100);
        return prompt;
    }
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < 101; ++i) prompt.push_back(1000 + (i * 7919) % 50000);
    return prompt;
}

SamplingParams greedy_with_logprobs() {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = 24;
    params.ignore_eos = true;
    params.logprobs = 5;
    return params;
}

CompletionOutput run_one(LLMEngine& engine, const std::string& id, const std::vector<int32_t>& prompt) {
    EXPECT_TRUE(engine.add_request(id, prompt, greedy_with_logprobs()).ok());
    std::vector<RequestOutput> finished;
    while (engine.has_unfinished_requests()) {
        for (auto& output : engine.step()) finished.push_back(std::move(output));
    }
    EXPECT_EQ(finished.size(), 1u);
    return finished.empty() ? CompletionOutput{} : finished[0].outputs[0];
}

// Bit-identical: token ids and every logprob compared as floats with ==.
void expect_identical(const CompletionOutput& a, const CompletionOutput& b, const std::string& what) {
    EXPECT_EQ(a.token_ids, b.token_ids) << what;
    ASSERT_EQ(a.logprobs.size(), b.logprobs.size()) << what;
    for (size_t i = 0; i < a.logprobs.size(); ++i) {
        EXPECT_EQ(a.logprobs[i].logprob, b.logprobs[i].logprob) << what << " token " << i;
        EXPECT_EQ(a.logprobs[i].top, b.logprobs[i].top) << what << " token " << i;
    }
}

class KvOffloadEngine : public ::testing::TestWithParam<TierCase> {
  protected:
    EngineConfig config_with(const std::string& dir) const {
        EngineConfig config = GetParam().config();
        config.kv_offload_dir = dir;
        config.kv_offload_load_mode = KvLoadMode::Always;  // tiny models compute faster than they read
        return config;
    }
};

TEST_P(KvOffloadEngine, RestartedEngineLoadsThePromptAndAnswersBitIdentically) {
    const std::string dir = make_temp_dir("kv_offload_restart_" + GetParam().name);
    const std::vector<int32_t> prompt = long_prompt(GetParam().name);
    const int64_t num_loadable = (int64_t(prompt.size()) - 1) / 16 * 16;  // full blocks, last token computed
    CompletionOutput cold, ram_hit;
    {
        auto engine = make_engine(config_with(dir));
        cold = run_one(*engine, "cold", prompt);
        ram_hit = run_one(*engine, "ram", prompt);  // the same split as a load from disk: cached + rest
        EXPECT_EQ(engine->stats().num_prompt_tokens_loaded, 0);
    }  // destroyed: every queued block is written
    EXPECT_GE(int64_t(kv_block_files(dir).size()), num_loadable / 16);
    auto restarted = make_engine(config_with(dir));
    const CompletionOutput warm = run_one(*restarted, "warm", prompt);
    EXPECT_EQ(warm.token_ids, cold.token_ids);
    expect_identical(warm, ram_hit, "disk load vs RAM prefix hit");
    const EngineStats stats = restarted->stats();
    EXPECT_EQ(stats.num_prompt_tokens_loaded, num_loadable);
    EXPECT_EQ(stats.num_prompt_tokens_computed, int64_t(prompt.size()) - num_loadable);
    const KvOffloadStats tier = *restarted->kv_offload_stats();
    EXPECT_EQ(tier.blocks_loaded, num_loadable / 16);
    EXPECT_EQ(tier.store.hits, num_loadable / 16);
    EXPECT_EQ(tier.store.corrupt, 0);
}

TEST_P(KvOffloadEngine, CorruptedBlockFilesAreMissesNotCrashes) {
    const std::string dir = make_temp_dir("kv_offload_corrupt_" + GetParam().name);
    const std::vector<int32_t> prompt = long_prompt(GetParam().name);
    CompletionOutput cold;
    {
        auto engine = make_engine(config_with(dir));
        cold = run_one(*engine, "cold", prompt);
    }
    const auto files = kv_block_files(dir);
    ASSERT_FALSE(files.empty());
    for (const fs::path& file : files) {
        std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
        stream.seekp(KvDiskStore::kHeaderBytes + 100);
        stream.put('\x5a');
        stream.put('\xa5');
    }
    auto restarted = make_engine(config_with(dir));
    const CompletionOutput again = run_one(*restarted, "again", prompt);
    EXPECT_EQ(again.token_ids, cold.token_ids);
    EXPECT_EQ(restarted->stats().num_prompt_tokens_loaded, 0);
    EXPECT_EQ(restarted->stats().num_prompt_tokens_computed, int64_t(prompt.size()));
    EXPECT_EQ(restarted->kv_offload_stats()->store.corrupt, 1);  // the first block: the chain stops there
}

TEST_P(KvOffloadEngine, DirectoryStaysWithinItsBoundUnderTenTimesItsWrites) {
    const std::string dir = make_temp_dir("kv_offload_bound_" + GetParam().name);
    EngineConfig config = config_with(dir);
    const int64_t file_bytes =
        KvDiskStore::kHeaderBytes + make_engine(config)->kv_offload_stats()->block_payload_bytes;
    constexpr int64_t kBoundBlocks = 6;
    config.kv_offload_bytes = kBoundBlocks * file_bytes + file_bytes / 2;
    auto store = KvDiskStore::open(dir, config.kv_offload_bytes);  // only to measure the directory
    ASSERT_TRUE(store.ok());
    int64_t num_written = 0;
    {
        auto engine = make_engine(config);
        const std::vector<int32_t> base = long_prompt(GetParam().name);
        for (int32_t i = 0; i < 10; ++i) {
            std::vector<int32_t> prompt = base;
            prompt[1] = 100 + i;  // a different chain from the second block on
            run_one(*engine, "request" + std::to_string(i), prompt);
            EXPECT_LE((*store)->used_bytes(), config.kv_offload_bytes) << "after request " << i;
        }
    }
    EXPECT_LE((*store)->used_bytes(), config.kv_offload_bytes);
    for (const fs::path& file : kv_block_files(dir)) {
        EXPECT_EQ(int64_t(fs::file_size(file)), file_bytes);
        ++num_written;
    }
    EXPECT_EQ(num_written, kBoundBlocks);
}

TEST_P(KvOffloadEngine, AnotherModelIdentityFindsNothing) {
    const std::string dir = make_temp_dir("kv_offload_identity_" + GetParam().name);
    const std::vector<int32_t> prompt = long_prompt(GetParam().name);
    {
        auto engine = make_engine(config_with(dir));
        run_one(*engine, "write", prompt);
    }
    EngineConfig other = config_with(dir);
    other.runner.block_size = 32;  // another KV layout: other keys, other sizes
    auto engine = make_engine(other);
    run_one(*engine, "read", prompt);
    EXPECT_EQ(engine->stats().num_prompt_tokens_loaded, 0);
    EXPECT_EQ(engine->kv_offload_stats()->store.hits, 0);
}

INSTANTIATE_TEST_SUITE_P(Models, KvOffloadEngine,
                         ::testing::Values(TierCase{"stories260k", &stories_config},
                                           TierCase{"qwen3_tiny", &qwen3_tiny_offload_config}),
                         [](const auto& info) { return info.param.name; });

TEST(KvOffloadConfig, RefusedWhereItCannotWork) {
    const std::string dir = make_temp_dir("kv_offload_refused");
    auto expect_refused = [](EngineConfig config, const std::string& needle) {
        auto engine = LLMEngine::create(config);
        ASSERT_FALSE(engine.ok()) << needle;
        EXPECT_EQ(engine.error().kind, ErrorKind::InvalidArgument);
        EXPECT_NE(engine.error().message.find(needle), std::string::npos) << engine.error().message;
    };
    EngineConfig config = stories_config();
    config.kv_offload_dir = dir;
    EngineConfig tensor_parallel = config;
    tensor_parallel.tensor_parallel_size = 2;
    expect_refused(tensor_parallel, "not supported with -tp > 1");
    EngineConfig no_caching = config;
    no_caching.enable_prefix_caching = false;
    expect_refused(no_caching, "needs prefix caching");
    std::ofstream(dir + "/file") << "x";
    EngineConfig not_a_dir = config;
    not_a_dir.kv_offload_dir = dir + "/file";
    expect_refused(not_a_dir, "--kv-offload-dir " + dir + "/file: not a directory");
    EngineConfig too_small = config;
    too_small.kv_offload_bytes = 4096;
    expect_refused(too_small, "--kv-offload-size");
}

}  // namespace
}  // namespace lmrun
