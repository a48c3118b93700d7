#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

namespace lmrun {
namespace {

constexpr int32_t kEos = 1;

// The token the fake model samples: depends only on the sequence and the position,
// so preemption and recompute must not change any output.
int32_t fake_token(const Sequence& seq) {
    return static_cast<int32_t>(500 + 100 * seq.seq_id + seq.num_completion_tokens());
}

std::vector<int32_t> fake_completion(int64_t seq_id, int64_t num_tokens) {
    std::vector<int32_t> tokens;
    for (int64_t i = 0; i < num_tokens; ++i) tokens.push_back(static_cast<int32_t>(500 + 100 * seq_id + i));
    return tokens;
}

std::vector<int32_t> distinct_prompt(int64_t seq_id, int64_t num_tokens) {
    std::vector<int32_t> tokens(static_cast<size_t>(num_tokens));
    std::iota(tokens.begin(), tokens.end(), static_cast<int32_t>(10000 * (seq_id + 1)));
    return tokens;
}

struct Scheduled {
    int64_t seq_id;
    int64_t num_new_tokens;
    bool sample;
    bool operator==(const Scheduled&) const = default;
};

void PrintTo(const Scheduled& s, std::ostream* os) {
    *os << "{" << s.seq_id << ", " << s.num_new_tokens << ", " << (s.sample ? "sample" : "no sample") << "}";
}

// What one step must produce; the queues and free blocks are checked after postprocess.
struct ExpectedStep {
    std::vector<Scheduled> scheduled;
    std::vector<int64_t> preempted;
    std::vector<int64_t> finished;
    std::vector<int64_t> running;
    std::vector<int64_t> waiting;
    int64_t num_free_blocks;
};

std::vector<int64_t> ids_of(const std::vector<Sequence*>& seqs) {
    std::vector<int64_t> ids;
    for (const Sequence* seq : seqs) ids.push_back(seq->seq_id);
    return ids;
}

std::vector<int64_t> ids_of(const std::deque<std::shared_ptr<Sequence>>& seqs) {
    std::vector<int64_t> ids;
    for (const auto& seq : seqs) ids.push_back(seq->seq_id);
    return ids;
}

struct Harness {
    Harness(SchedulerConfig config, int64_t num_blocks, int64_t block_size, bool prefix_caching = true,
            std::vector<int32_t> eos_token_ids = {kEos})
        : block_manager(num_blocks, block_size, prefix_caching),
          scheduler(config, block_manager, std::move(eos_token_ids)) {}

    std::shared_ptr<Sequence> add(int64_t seq_id, std::vector<int32_t> prompt, SamplingParams params) {
        auto seq = std::make_shared<Sequence>(seq_id, std::move(prompt), params);
        seqs[seq_id] = seq;
        scheduler.add(seq);
        return seq;
    }
    std::shared_ptr<Sequence> add(int64_t seq_id, int64_t num_prompt_tokens, int64_t max_tokens) {
        SamplingParams params;
        params.max_tokens = max_tokens;
        return add(seq_id, distinct_prompt(seq_id, num_prompt_tokens), params);
    }

    struct StepResult {
        SchedulerOutput output;
        std::vector<Sequence*> finished;
    };
    StepResult step() {
        StepResult result{scheduler.schedule(), {}};
        std::vector<int32_t> sampled;
        for (const ScheduledSequence& entry : result.output.scheduled) {
            if (entry.sample) sampled.push_back(token_fn(*entry.seq));
        }
        result.finished = scheduler.postprocess(result.output, sampled);
        return result;
    }

    void expect_steps(const std::vector<ExpectedStep>& steps) {
        for (size_t i = 0; i < steps.size(); ++i) {
            SCOPED_TRACE("step " + std::to_string(i + 1));
            const ExpectedStep& expected = steps[i];
            StepResult result = step();
            std::vector<Scheduled> scheduled;
            for (const ScheduledSequence& entry : result.output.scheduled)
                scheduled.push_back({entry.seq->seq_id, entry.num_new_tokens, entry.sample});
            EXPECT_EQ(scheduled, expected.scheduled);
            EXPECT_EQ(ids_of(result.output.preempted), expected.preempted);
            EXPECT_EQ(ids_of(result.finished), expected.finished);
            EXPECT_EQ(ids_of(scheduler.running()), expected.running);
            EXPECT_EQ(ids_of(scheduler.waiting()), expected.waiting);
            EXPECT_EQ(block_manager.num_free_blocks(), expected.num_free_blocks);
        }
    }

    std::vector<int32_t> completion(int64_t seq_id) const {
        auto tokens = seqs.at(seq_id)->completion_token_ids();
        return {tokens.begin(), tokens.end()};
    }

    BlockManager block_manager;
    Scheduler scheduler;
    std::map<int64_t, std::shared_ptr<Sequence>> seqs;
    std::function<int32_t(const Sequence&)> token_fn = fake_token;
};

SchedulerConfig make_config(int64_t max_num_batched_tokens, int64_t max_num_seqs = 64) {
    SchedulerConfig config;
    config.max_num_batched_tokens = max_num_batched_tokens;
    config.max_num_seqs = max_num_seqs;
    return config;
}

SamplingParams stop_params(int64_t max_tokens, int64_t min_tokens = 0, bool ignore_eos = false,
                           std::vector<int32_t> stop_token_ids = {}) {
    SamplingParams params;
    params.max_tokens = max_tokens;
    params.min_tokens = min_tokens;
    params.ignore_eos = ignore_eos;
    params.stop_token_ids = std::move(stop_token_ids);
    return params;
}

TEST(Scheduler, PrefillsThenDecodes) {
    Harness h(make_config(64), 16, 4);
    h.add(1, 5, 3);
    h.add(2, 7, 3);
    h.expect_steps({
        {{{1, 5, true}, {2, 7, true}}, {}, {}, {1, 2}, {}, 12},
        {{{1, 1, true}, {2, 1, true}}, {}, {}, {1, 2}, {}, 12},
        // Sequence 2 computes position 8: a third block.
        {{{1, 1, true}, {2, 1, true}}, {}, {1, 2}, {}, {}, 16},
    });
    EXPECT_EQ(h.completion(1), fake_completion(1, 3));
    EXPECT_EQ(h.completion(2), fake_completion(2, 3));
    EXPECT_EQ(h.seqs[1]->finish_reason, FinishReason::Length);
    EXPECT_FALSE(h.scheduler.has_unfinished());
}

TEST(Scheduler, ChunksALongPromptUnderASmallBudget) {
    Harness h(make_config(8), 16, 4);
    auto seq = h.add(1, 20, 2);
    h.expect_steps({{{{1, 8, false}}, {}, {}, {1}, {}, 14}});
    // The chunk's full blocks are registered only now that their KV is computed.
    EXPECT_EQ(seq->num_computed_tokens, 8);
    EXPECT_TRUE(h.block_manager.is_cached(seq->block_table[1]));
    h.expect_steps({
        {{{1, 8, false}}, {}, {}, {1}, {}, 12},
        {{{1, 4, true}}, {}, {}, {1}, {}, 11},
        {{{1, 1, true}}, {}, {1}, {}, {}, 16},
    });
    EXPECT_EQ(h.completion(1), fake_completion(1, 2));
}

// vLLM's toy batch: A decodes one token while B prefills three.
TEST(Scheduler, MixesDecodesAndAPrefillChunk) {
    Harness h(make_config(4), 16, 4);
    h.add(1, 4, 10);
    h.add(2, 7, 2);
    h.expect_steps({
        {{{1, 4, true}}, {}, {}, {1}, {2}, 15},
        {{{1, 1, true}, {2, 3, false}}, {}, {}, {1, 2}, {}, 13},
        {{{1, 1, true}, {2, 3, false}}, {}, {}, {1, 2}, {}, 12},
        {{{1, 1, true}, {2, 1, true}}, {}, {}, {1, 2}, {}, 12},
        {{{1, 1, true}, {2, 1, true}}, {}, {2}, {1}, {}, 14},
    });
    EXPECT_EQ(h.completion(2), fake_completion(2, 2));
}

TEST(Scheduler, WithoutChunkedPrefillAPromptWaitsForTheWholeBudget) {
    SchedulerConfig config = make_config(8);
    config.enable_chunked_prefill = false;
    Harness h(config, 16, 4);
    h.add(1, 6, 3);
    h.add(2, 5, 1);
    h.expect_steps({
        {{{1, 6, true}}, {}, {}, {1}, {2}, 14},
        {{{1, 1, true}, {2, 5, true}}, {}, {2}, {1}, {}, 14},
    });
}

TEST(Scheduler, PreemptsTheNewestSequenceWhenBlocksRunOut) {
    // 6 blocks of 2 tokens, prefix caching off so that a preempted sequence recomputes
    // everything: its prompt and its generated tokens.
    Harness h(make_config(64, /*max_num_seqs=*/2), 6, 2, /*prefix_caching=*/false);
    h.add(1, 4, 6);
    h.add(2, 4, 6);
    h.add(3, 2, 1);
    h.expect_steps({
        {{{1, 4, true}, {2, 4, true}}, {}, {}, {1, 2}, {3}, 2},
        {{{1, 1, true}, {2, 1, true}}, {}, {}, {1, 2}, {3}, 0},
        {{{1, 1, true}, {2, 1, true}}, {}, {}, {1, 2}, {3}, 0},
        // 1 needs a 4th block: 2 (the newest) releases its 3 and goes to the front.
        {{{1, 1, true}}, {2}, {}, {1}, {2, 3}, 2},
        // 2 (7 tokens) needs 4 blocks; FIFO keeps 3 behind it.
        {{{1, 1, true}}, {}, {}, {1}, {2, 3}, 2},
        {{{1, 1, true}}, {}, {1}, {}, {2, 3}, 6},
        // 2 recomputes its 4 prompt and 3 generated tokens, 3 joins in the same step.
        {{{2, 7, true}, {3, 2, true}}, {}, {3}, {2}, {}, 2},
        {{{2, 1, true}}, {}, {}, {2}, {}, 2},
        {{{2, 1, true}}, {}, {2}, {}, {}, 6},
    });
    EXPECT_EQ(h.completion(1), fake_completion(1, 6));
    EXPECT_EQ(h.completion(2), fake_completion(2, 6));
    EXPECT_EQ(h.completion(3), fake_completion(3, 1));
    EXPECT_EQ(h.seqs[2]->num_preemptions, 1);
    EXPECT_EQ(h.seqs[1]->num_preemptions, 0);
    EXPECT_EQ(h.scheduler.num_preemptions(), 1);
    EXPECT_FALSE(h.scheduler.has_unfinished());
}

TEST(Scheduler, OutputsUnaffectedByPreemptionWithPrefixCaching) {
    const std::vector<std::pair<int64_t, int64_t>> workload = {{9, 12}, {3, 20}, {14, 7},
                                                               {6, 15}, {11, 9}, {2, 18}};
    auto run = [&](int64_t num_blocks, int64_t max_num_batched_tokens) {
        Harness h(make_config(max_num_batched_tokens), num_blocks, 4);
        for (size_t i = 0; i < workload.size(); ++i) {
            // Sequences share a 8-token system prompt, so the prefix cache is exercised.
            std::vector<int32_t> prompt = distinct_prompt(0, 8);
            const auto tail = distinct_prompt(static_cast<int64_t>(i) + 1, workload[i].first);
            prompt.insert(prompt.end(), tail.begin(), tail.end());
            SamplingParams params;
            params.max_tokens = workload[i].second;
            h.add(static_cast<int64_t>(i), prompt, params);
        }
        int64_t num_steps = 0;
        while (h.scheduler.has_unfinished()) {
            ASSERT_LT(++num_steps, 1000) << "no progress";
            auto result = h.step();
            ASSERT_TRUE(result.output.failed.empty());
            ASSERT_FALSE(result.output.scheduled.empty());
            int64_t num_batched_tokens = 0;
            for (const ScheduledSequence& entry : result.output.scheduled)
                num_batched_tokens += entry.num_new_tokens;
            ASSERT_LE(num_batched_tokens, max_num_batched_tokens);
        }
        for (size_t i = 0; i < workload.size(); ++i) {
            EXPECT_EQ(h.completion(static_cast<int64_t>(i)),
                      fake_completion(static_cast<int64_t>(i), workload[i].second));
            EXPECT_EQ(h.seqs[static_cast<int64_t>(i)]->finish_reason, FinishReason::Length);
        }
        EXPECT_EQ(h.block_manager.num_free_blocks(), num_blocks);
        if (num_blocks < 40) {
            EXPECT_GT(h.scheduler.num_preemptions(), 0);
            EXPECT_GT(h.block_manager.prefix_cache_hits(), 0);
        } else {
            EXPECT_EQ(h.scheduler.num_preemptions(), 0);
        }
    };
    run(100, 64);
    run(10, 64);
    run(10, 5);
}

TEST(Scheduler, FailsASequenceThatCannotFitInTheWholeCache) {
    Harness h(make_config(64), 4, 2);  // room for 8 tokens
    auto too_big = h.add(1, 9, 4);
    h.add(2, 3, 1);
    auto result = h.step();
    ASSERT_EQ(ids_of(result.output.failed), (std::vector<int64_t>{1}));
    EXPECT_EQ(too_big->finish_reason, FinishReason::Error);
    EXPECT_EQ(too_big->error_message, "prompt of 9 tokens needs 5 KV blocks but the cache has 4");
    EXPECT_TRUE(too_big->is_finished());
    ASSERT_EQ(result.output.scheduled.size(), 1u);  // the next one is admitted in the same step
    EXPECT_EQ(result.output.scheduled[0].seq->seq_id, 2);
    EXPECT_EQ(result.finished.size(), 1u);
    EXPECT_EQ(h.block_manager.num_free_blocks(), 4);
}

TEST(Scheduler, FailsASequenceThatOutgrowsTheWholeCache) {
    Harness h(make_config(64), 4, 2);
    auto seq = h.add(1, 7, 10);
    h.expect_steps({
        {{{1, 7, true}}, {}, {}, {1}, {}, 0},
        {{{1, 1, true}}, {}, {}, {1}, {}, 0},
    });
    auto result = h.step();  // position 8 needs a 5th block
    EXPECT_TRUE(result.output.scheduled.empty());
    ASSERT_EQ(ids_of(result.output.failed), (std::vector<int64_t>{1}));
    EXPECT_EQ(seq->error_message, "sequence of 9 tokens needs 5 KV blocks but the cache has 4");
    EXPECT_EQ(h.block_manager.num_free_blocks(), 4);
    EXPECT_FALSE(h.scheduler.has_unfinished());
}

TEST(Scheduler, FailsPromptsLongerThanTheModelOrEmpty) {
    SchedulerConfig config = make_config(64);
    config.max_model_len = 8;
    Harness h(config, 16, 4);
    auto too_long = h.add(1, 9, 1);
    auto empty = h.add(2, 0, 1);
    auto result = h.step();
    EXPECT_EQ(ids_of(result.output.failed), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(too_long->error_message,
              "prompt has 9 tokens but the maximum context length is 8 (prompt + at least 1 new token)");
    EXPECT_EQ(empty->error_message, "prompt must not be empty");
    EXPECT_FALSE(h.scheduler.has_unfinished());
}

TEST(Scheduler, NeverSharesBlocksBeforeTheirKvIsComputed) {
    Harness h(make_config(64), 16, 4);
    const std::vector<int32_t> prompt = distinct_prompt(0, 12);
    auto a = h.add(1, prompt, stop_params(3));
    auto b = h.add(2, prompt, stop_params(3));
    // Same step: a's blocks are allocated but not yet written when b is admitted.
    h.expect_steps({{{{1, 12, true}, {2, 12, true}}, {}, {}, {1, 2}, {}, 10}});
    EXPECT_EQ(b->num_cached_tokens, 0);
    for (size_t i = 0; i < 3; ++i) EXPECT_NE(a->block_table[i], b->block_table[i]);
    EXPECT_EQ(h.block_manager.prefix_cache_hits(), 0);
    // Once computed they are shared: c takes 2 blocks (its last block is recomputed).
    auto c = h.add(3, prompt, stop_params(1));
    h.expect_steps({{{{1, 1, true}, {2, 1, true}, {3, 4, true}}, {}, {3}, {1, 2}, {}, 8}});
    EXPECT_EQ(c->num_cached_tokens, 8);
    EXPECT_EQ(h.block_manager.prefix_cache_hits(), 2);
}

TEST(Scheduler, ChecksPromptsUpFront) {
    SchedulerConfig config = make_config(16);
    config.max_model_len = 40;
    Harness h(config, 8, 4);  // 32 tokens of cache
    EXPECT_TRUE(h.scheduler.check_prompt(32).ok());
    const std::vector<std::pair<int64_t, std::string>> cases = {
        {0, "prompt must not be empty"},
        {33, "prompt of 33 tokens needs 9 KV blocks but the cache has 8"},
        {40, "prompt has 40 tokens but the maximum context length is 40 (prompt + at least 1 new token)"},
    };
    for (const auto& [num_tokens, message] : cases) {
        Status status = h.scheduler.check_prompt(num_tokens);
        ASSERT_FALSE(status.ok());
        EXPECT_EQ(status.error().message, message);
    }
    config.enable_chunked_prefill = false;
    Harness unchunked(config, 8, 4);
    Status status = unchunked.scheduler.check_prompt(17);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().message,
              "prompt of 17 tokens exceeds max_num_batched_tokens 16 and chunked prefill is disabled");
}

TEST(Scheduler, RespectsMaxNumSeqs) {
    Harness h(make_config(64, /*max_num_seqs=*/2), 16, 4);
    h.add(1, 3, 1);
    h.add(2, 3, 2);
    h.add(3, 3, 1);
    h.expect_steps({
        {{{1, 3, true}, {2, 3, true}}, {}, {1}, {2}, {3}, 15},
        {{{2, 1, true}, {3, 3, true}}, {}, {2, 3}, {}, {}, 16},
    });
}

struct StopCase {
    std::string name;
    SamplingParams params;
    std::vector<int32_t> sampled;  // the fake model's tokens, in order
    int64_t max_model_len;
    std::vector<int32_t> expected_completion;
    FinishReason expected_reason;
    StopReason expected_stop_reason = {};  // vLLM's: only a stop_token_ids match names its token
};

TEST(Scheduler, AppliesTokenStopRules) {
    const std::vector<StopCase> cases = {
        {"eos", stop_params(8), {5, kEos, 7}, 4096, {5, kEos}, FinishReason::Stop},
        {"second eos id", stop_params(8), {5, 3, 7}, 4096, {5, 3}, FinishReason::Stop},
        {"ignore_eos", stop_params(3, 0, true), {5, kEos, 7}, 4096, {5, kEos, 7}, FinishReason::Length},
        {"stop token id",
         stop_params(8, 0, false, {7}),
         {5, 6, 7, 8},
         4096,
         {5, 6, 7},
         FinishReason::Stop,
         7},
        {"stop token id despite ignore_eos",
         stop_params(8, 0, true, {kEos}),
         {5, kEos},
         4096,
         {5, kEos},
         FinishReason::Stop,
         kEos},
        {"eos that is also a stop token id stops as eos",
         stop_params(8, 0, false, {kEos}),
         {5, kEos},
         4096,
         {5, kEos},
         FinishReason::Stop},
        {"max_tokens", stop_params(2), {5, 6, 7}, 4096, {5, 6}, FinishReason::Length},
        {"eos on the last allowed token", stop_params(2), {5, kEos}, 4096, {5, kEos}, FinishReason::Stop},
        {"min_tokens suppresses eos",
         stop_params(8, 3),
         {kEos, kEos, kEos, 9},
         4096,
         {kEos, kEos, kEos},
         FinishReason::Stop},
        {"min_tokens suppresses stop ids",
         stop_params(8, 2, false, {7}),
         {7, 6, 7},
         4096,
         {7, 6, 7},
         FinishReason::Stop,
         7},
        {"min_tokens does not outlast max_tokens",
         stop_params(2, 2),
         {kEos, 6},
         4096,
         {kEos, 6},
         FinishReason::Length},
        {"max_model_len", stop_params(8), {5, 6, 7, 8}, 6, {5, 6, 7}, FinishReason::Length},
    };
    for (const StopCase& test_case : cases) {
        SCOPED_TRACE(test_case.name);
        SchedulerConfig config = make_config(64);
        config.max_model_len = test_case.max_model_len;
        Harness h(config, 16, 4, true, {kEos, 3});
        h.token_fn = [&](const Sequence& seq) {
            return test_case.sampled[static_cast<size_t>(seq.num_completion_tokens())];
        };
        auto seq = h.add(1, {20, 21, 22}, test_case.params);
        for (int i = 0; i < 20 && h.scheduler.has_unfinished(); ++i) h.step();
        EXPECT_FALSE(h.scheduler.has_unfinished());
        EXPECT_EQ(h.completion(1), test_case.expected_completion);
        EXPECT_EQ(seq->finish_reason, test_case.expected_reason);
        EXPECT_EQ(seq->stop_reason, test_case.expected_stop_reason);
        EXPECT_EQ(h.block_manager.num_free_blocks(), 16);
    }
}

TEST(Scheduler, AbortFreesBlocksAtOnce) {
    Harness h(make_config(64, /*max_num_seqs=*/1), 16, 4);
    auto running = h.add(1, 10, 100);
    auto waiting = h.add(2, 3, 100);
    h.step();
    EXPECT_EQ(h.block_manager.num_free_blocks(), 13);
    EXPECT_TRUE(h.scheduler.finish(1, FinishReason::Abort));
    EXPECT_EQ(h.block_manager.num_free_blocks(), 16);
    EXPECT_TRUE(running->block_table.empty());
    EXPECT_EQ(running->status, SequenceStatus::Finished);
    EXPECT_EQ(running->finish_reason, FinishReason::Abort);
    EXPECT_EQ(h.scheduler.num_running(), 0u);
    EXPECT_FALSE(h.scheduler.finish(1, FinishReason::Abort));
    EXPECT_FALSE(h.scheduler.finish(99, FinishReason::Abort));

    // Aborted between schedule() and postprocess(): its sampled token is dropped.
    auto output = h.scheduler.schedule();
    ASSERT_EQ(output.scheduled.size(), 1u);
    EXPECT_TRUE(h.scheduler.finish(2, FinishReason::Stop));
    EXPECT_TRUE(h.scheduler.postprocess(output, std::vector<int32_t>{777}).empty());
    EXPECT_EQ(waiting->num_completion_tokens(), 0);
    EXPECT_EQ(waiting->finish_reason, FinishReason::Stop);
    EXPECT_EQ(h.block_manager.num_free_blocks(), 16);
    EXPECT_FALSE(h.scheduler.has_unfinished());
}

TEST(Scheduler, AdmitsWithPrefixCacheHitsInAMixedStep) {
    Harness h(make_config(64), 16, 4);
    auto a = h.add(1, 8, 4);
    h.expect_steps({{{{1, 8, true}}, {}, {}, {1}, {}, 14}});
    std::vector<int32_t> prompt = distinct_prompt(1, 8);
    prompt.insert(prompt.end(), {7, 7});
    auto b = h.add(2, prompt, stop_params(2));
    // b takes a's two computed blocks and computes only its 2 own tokens.
    h.expect_steps({{{{1, 1, true}, {2, 2, true}}, {}, {}, {1, 2}, {}, 12}});
    EXPECT_EQ(b->num_cached_tokens, 8);
    EXPECT_EQ(b->block_table[0], a->block_table[0]);
    EXPECT_EQ(b->block_table[1], a->block_table[1]);
    EXPECT_EQ(h.block_manager.prefix_cache_hits(), 2);
    EXPECT_EQ(h.block_manager.prefix_cache_queries(), 1 + 2);
}

}  // namespace
}  // namespace lmrun
