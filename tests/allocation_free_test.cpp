// A decode step replayed from its plan performs no heap allocation, at every
// bucket size, for F32, BF16 and int8 weights and BF16, int8 and fp8 KV caches, in one process
// and on rank 0 of a tensor-parallel group (its step broadcast, all-reduces and logits gather
// included; the workers run the same code in their own processes). (Compiled only where the
// allocation counter can interpose malloc, i.e. not in the sanitizer build.)
#include "allocation_counter_util.h"

#if LMRUN_COUNT_ALLOCATIONS

#include <gtest/gtest.h>

#include <thread>

#include "engine/kv_offload.h"
#include "executor_test_util.h"
#include "runner_test_util.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

ModelRunnerConfig decode_config(const std::string& kv_cache_dtype = "auto") {
    ModelRunnerConfig config;
    config.kv_cache_dtype = kv_cache_dtype;
    config.max_num_seqs = 20;  // buckets 1, 2, 4, 8, 16, 20
    config.max_num_batched_tokens = 256;
    config.max_model_len = 256;
    config.block_size = 16;
    config.kv_cache_memory_bytes = 256ll << 20;
    return config;
}

// with_masks: every third row samples under a structured-output token mask (the
// engine fills masks before the step; applying one must not allocate either).
void expect_decode_steps_allocation_free(ModelRunner* runner, const std::string& model,
                                         bool with_masks = false) {
    const int64_t vocab = runner->model().config().vocab_size;
    std::vector<uint32_t> mask(size_t((vocab + 31) / 32), 0);
    for (int64_t id = 0; id < vocab; id += 7) mask[size_t(id / 32)] |= 1u << (id % 32);
    const int64_t context = 40;
    const int64_t steps = 6;
    for (int64_t batch : {1, 3, 8, 13, 20}) {
        std::vector<std::vector<int32_t>> ids, blocks;
        int64_t next_block = runner->num_kv_blocks() - 1;
        for (int64_t s = 0; s < batch; ++s) {
            std::vector<int32_t> tokens(static_cast<size_t>(context + steps));
            for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7 + s * 13) % vocab);
            ids.push_back(tokens);
            blocks.push_back(take_blocks(next_block, context + steps, runner->block_size()));
        }
        std::vector<RunnerSequence> seqs(static_cast<size_t>(batch));
        for (int64_t s = 0; s < batch; ++s) {
            seqs[s] = RunnerSequence{ids[s], blocks[s], 0, context, true, {}};
            runner->run(std::span(&seqs[s], 1));
        }
        for (int64_t step = 0; step < steps; ++step) {
            for (int64_t s = 0; s < batch; ++s)
                seqs[s] = RunnerSequence{ids[s], blocks[s], context + step, 1, true, {}};
            // Greedy and sampled rows both go through the sampler.
            for (int64_t s = 0; s < batch; s += 2) seqs[s].sampling.temperature = 0.8f;
            if (with_masks) {
                for (int64_t s = 0; s < batch; s += 3) seqs[s].sampling.allowed_token_mask = mask.data();
            }
            start_counting_allocations();
            runner->run(seqs);
            const int64_t count = stop_counting_allocations();
            EXPECT_EQ(count, 0) << model << " batch " << batch << " step " << step;
        }
    }
}

TEST(AllocationFree, DecodeStepF32) {
    expect_decode_steps_allocation_free(
        make_runner(testdata_path("stories260k"), DType::F32, decode_config()).get(), "stories260k");
}
TEST(AllocationFree, DecodeStepBf16) {
    expect_decode_steps_allocation_free(
        make_runner(testdata_path("qwen3-tiny"), DType::BF16, decode_config()).get(), "qwen3-tiny");
}
TEST(AllocationFree, DecodeStepTensorParallelRankZero) {
    auto executor =
        make_executor("qwen3-tiny", DType::BF16, decode_config(), Launch{parallel::ExecutorBackend::Mp, 2});
    expect_decode_steps_allocation_free(&executor->runner(), "qwen3-tiny -tp 2");
    EXPECT_FALSE(executor->runner().group().failed());
}
TEST(AllocationFree, DecodeStepInt8WeightsInt8Kv) {
    WeightQuantization int8;
    int8.int8_at_load = true;
    expect_decode_steps_allocation_free(
        make_runner(testdata_path("qwen3-tiny"), DType::BF16, decode_config("int8"), int8).get(),
        "qwen3-tiny");
    expect_decode_steps_allocation_free(
        make_runner(testdata_path("stories260k"), DType::F32, decode_config("fp8_e4m3"), int8).get(),
        "stories260k");
}

TEST(AllocationFree, DecodeStepWithTokenMasks) {
    expect_decode_steps_allocation_free(
        make_runner(testdata_path("qwen3-tiny"), DType::BF16, decode_config()).get(), "qwen3-tiny",
        /*with_masks=*/true);
}

// Start-up reserves the kernels' scratch from the shapes instead of running full-size forwards:
// the first decode steps after start-up, at the largest bucket and with a context long enough
// for split-K attention, must find it reserved. The steps run on a fresh thread (fresh
// thread-local scratch, a fresh OpenMP team), not the one that built the runner, as a server's
// engine thread would; the prompts are a single token, so no prefill grows the decode scratch.
ModelRunnerConfig first_decodes_config() {
    ModelRunnerConfig config;
    config.max_num_seqs = 20;
    config.max_num_batched_tokens = 1024;
    config.max_model_len = 1024;
    config.block_size = 16;
    config.kv_cache_memory_bytes = 64ll << 20;
    return config;
}

void expect_first_decodes_allocation_free(ModelRunner* runner, const std::string& model) {
    std::thread([&] {
        const int64_t vocab = runner->model().config().vocab_size;
        int64_t next_block = runner->num_kv_blocks() - 1;
        // 20 one-token prompts, then decode all 20 at once (the largest bucket).
        std::vector<std::vector<int32_t>> ids, blocks;
        for (int64_t s = 0; s < 20; ++s) {
            ids.push_back({int32_t((s * 31 + 5) % vocab), 0});
            blocks.push_back(take_blocks(next_block, 2, runner->block_size()));
        }
        std::vector<RunnerSequence> seqs(20);
        for (int64_t s = 0; s < 20; ++s) {
            seqs[s] = RunnerSequence{ids[s], blocks[s], 0, 1, true, {}};
            runner->run(std::span(&seqs[s], 1));
        }
        for (int64_t s = 0; s < 20; ++s) seqs[s] = RunnerSequence{ids[s], blocks[s], 1, 1, true, {}};
        start_counting_allocations();
        runner->run(seqs);
        EXPECT_EQ(stop_counting_allocations(), 0) << model << ": first decode at the largest bucket";

        // One sequence of 600 tokens of context decodes with split-K attention (partials).
        const int64_t context = 600;
        std::vector<int32_t> long_ids(size_t(context + 1));
        for (size_t i = 0; i < long_ids.size(); ++i) long_ids[i] = int32_t((i * 11 + 3) % vocab);
        std::vector<int32_t> long_blocks = take_blocks(next_block, context + 1, runner->block_size());
        RunnerSequence prefill{long_ids, long_blocks, 0, context, true, {}};
        runner->run(std::span(&prefill, 1));
        RunnerSequence decode{long_ids, long_blocks, context, 1, true, {}};
        start_counting_allocations();
        runner->run(std::span(&decode, 1));
        EXPECT_EQ(stop_counting_allocations(), 0) << model << ": first split-K decode";
    }).join();
}

TEST(AllocationFree, FirstDecodesAfterStartUpBf16) {
    expect_first_decodes_allocation_free(
        make_runner(testdata_path("qwen3-tiny"), DType::BF16, first_decodes_config()).get(), "qwen3-tiny");
}
TEST(AllocationFree, FirstDecodesAfterStartUpF32) {
    expect_first_decodes_allocation_free(
        make_runner(testdata_path("qwen3-tiny"), DType::F32, first_decodes_config()).get(), "qwen3-tiny");
}
// Rank 0 of -tp 2: its shard's scratch reserved from the shapes, its collectives included.
TEST(AllocationFree, FirstDecodesAfterStartUpTensorParallelRankZero) {
    auto executor = make_executor("qwen3-tiny", DType::BF16, first_decodes_config(),
                                  Launch{parallel::ExecutorBackend::Mp, 2});
    expect_first_decodes_allocation_free(&executor->runner(), "qwen3-tiny -tp 2");
    EXPECT_FALSE(executor->runner().group().failed());
}

// A store that only counts what it is given (the disk store formats a temporary file name).
class CountingStore final : public KvBlockStore {
  public:
    bool contains(const KvBlockKey&) override { return false; }
    bool get(const KvBlockKey&, std::span<const std::span<std::byte>>) override { return false; }
    Status put(const KvBlockKey&, std::span<const std::span<const std::byte>> segments) override {
        for (const auto& segment : segments) bytes_ += int64_t(segment.size());
        ++blocks_;
        return ok_status();
    }
    std::atomic<int64_t> blocks_{0}, bytes_{0};
};

// The KV tier's work after a step (pinning newly full blocks, queueing them to the writer,
// unpinning written ones) allocates nothing, on the engine thread or the writer's.
TEST(AllocationFree, KvOffloadAfterStep) {
    KvCacheShape shape{2, 16, 4, 2, 8, DType::BF16};
    auto cache = KvCache::create(shape);
    ASSERT_TRUE(cache.ok());
    BlockManager block_manager(shape.num_blocks, shape.block_size);
    auto store = std::make_unique<CountingStore>();
    CountingStore* counting = store.get();
    KvOffload offload(std::move(store), 1, *cache.value(), block_manager, KvLoadMode::Always, 4);
    std::vector<int32_t> tokens(41);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(i);
    Sequence seq(0, tokens, SamplingParams{});
    block_manager.allocate(seq, {}, seq.num_tokens());
    // Decode-like steps: one token at a time, a block fills every 4 tokens.
    int64_t num_written = 0;
    for (int64_t step = 1; step <= seq.num_tokens(); ++step) {
        seq.num_computed_tokens = step;
        block_manager.cache_computed_blocks(seq);
        start_counting_allocations();
        offload.after_step();
        offload.flush();
        EXPECT_EQ(stop_counting_allocations(), 0) << "step " << step;
        num_written = counting->blocks_;
    }
    EXPECT_EQ(num_written, 10);
    EXPECT_EQ(counting->bytes_, 10 * offload.block_payload_bytes());
    EXPECT_EQ(block_manager.ref_count(seq.block_table[0]), 1);  // unpinned again: only seq holds it
}

TEST(AllocationFree, CounterSeesAllocations) {
    start_counting_allocations();
    auto* vector = new std::vector<int>(100);
    int64_t count = stop_counting_allocations();
    delete vector;
    EXPECT_GE(count, 1);
}

}  // namespace
}  // namespace lmrun::testing

#endif
