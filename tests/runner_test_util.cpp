#include "runner_test_util.h"

#include <algorithm>
#include <stdexcept>

#include <gtest/gtest.h>

#include "model/config.h"
#include "test_util.h"

namespace lmrun::testing {

std::unique_ptr<ModelRunner> make_runner(const std::string& model_dir, DType weight_dtype,
                                         const ModelRunnerConfig& config,
                                         const WeightQuantization& quantization,
                                         const PackedCacheOptions& packed_cache) {
    auto model_config = load_model_config(model_dir);
    if (!model_config.ok()) throw std::runtime_error(model_config.error().message);
    auto model =
        CausalLM::load(model_dir, model_config.value(), weight_dtype, {}, quantization, packed_cache);
    if (!model.ok()) throw std::runtime_error(model.error().message);
    auto runner = ModelRunner::create(std::move(model).value(), config);
    if (!runner.ok()) throw std::runtime_error(runner.error().message);
    return std::move(runner).value();
}

std::vector<int32_t> take_blocks(int64_t& next_block_from_top, int64_t num_tokens, int64_t block_size) {
    std::vector<int32_t> blocks;
    for (int64_t covered = 0; covered < num_tokens; covered += block_size) {
        if (next_block_from_top < 0) throw std::runtime_error("test ran out of KV blocks");
        blocks.push_back(int32_t(next_block_from_top--));
    }
    return blocks;
}

namespace {

struct DriverSequence {
    std::vector<int32_t> token_ids;
    std::vector<int32_t> block_table;
    int64_t num_computed = 0;
    int64_t num_generated = 0;
    bool done = false;
};

void advance(std::vector<DriverSequence*>& active, std::span<const SampleResult> results,
             const std::vector<GreedyRequest>& requests, const std::vector<DriverSequence>& all) {
    for (size_t i = 0; i < active.size(); ++i) {
        DriverSequence& seq = *active[i];
        const GreedyRequest& request = requests[&seq - all.data()];
        seq.num_computed = int64_t(seq.token_ids.size());
        int32_t token = results[i].token_id;
        bool stop = std::find(request.stop_token_ids.begin(), request.stop_token_ids.end(), token) !=
                    request.stop_token_ids.end();
        if (!stop) {
            seq.token_ids.push_back(token);
            ++seq.num_generated;
        }
        seq.done = stop || seq.num_generated >= request.max_new_tokens;
    }
}

RunnerSequence as_runner_sequence(const DriverSequence& seq) {
    RunnerSequence runner_seq;
    runner_seq.token_ids = seq.token_ids;
    runner_seq.block_table = seq.block_table;
    runner_seq.num_computed_tokens = seq.num_computed;
    runner_seq.num_new_tokens = int64_t(seq.token_ids.size()) - seq.num_computed;
    runner_seq.sample = true;
    return runner_seq;
}

}  // namespace

std::vector<std::vector<int32_t>> run_greedy(ModelRunner& runner, const std::vector<GreedyRequest>& requests,
                                             bool batch_prefill) {
    std::vector<DriverSequence> seqs(requests.size());
    int64_t next_block = runner.num_kv_blocks() - 1;
    for (size_t i = 0; i < requests.size(); ++i) {
        seqs[i].token_ids = requests[i].prompt_ids;
        int64_t total = int64_t(requests[i].prompt_ids.size() + requests[i].max_new_tokens);
        seqs[i].block_table = take_blocks(next_block, total, runner.block_size());
    }
    auto step = [&](std::vector<DriverSequence*> active) {
        std::vector<RunnerSequence> batch;
        for (DriverSequence* seq : active) batch.push_back(as_runner_sequence(*seq));
        advance(active, runner.run(batch), requests, seqs);
    };
    if (batch_prefill) {
        std::vector<DriverSequence*> all;
        for (auto& seq : seqs) all.push_back(&seq);
        step(all);
    } else {
        for (auto& seq : seqs) step({&seq});
    }
    while (true) {
        std::vector<DriverSequence*> active;
        for (auto& seq : seqs) {
            if (!seq.done) active.push_back(&seq);
        }
        if (active.empty()) break;
        step(active);
    }
    std::vector<std::vector<int32_t>> outputs;
    for (size_t i = 0; i < seqs.size(); ++i) {
        outputs.emplace_back(seqs[i].token_ids.begin() + int64_t(requests[i].prompt_ids.size()),
                             seqs[i].token_ids.end());
    }
    return outputs;
}

std::vector<GoldenCase> load_cases(const std::string& model) {
    nlohmann::json expected = read_json_file(testdata_path(model + "/expected.json"));
    std::vector<GoldenCase> cases;
    for (const auto& item : expected["cases"]) {
        GoldenCase golden;
        golden.name = item["name"];
        golden.prompt_ids = item["prompt_ids"].get<std::vector<int32_t>>();
        golden.output_ids = item["output_ids"].get<std::vector<int32_t>>();
        for (const auto& step : item["low_margin_steps"])
            golden.low_margin_steps.push_back(step[0].get<int64_t>());
        cases.push_back(golden);
    }
    return cases;
}

std::vector<GreedyRequest> stories_requests(const std::vector<GoldenCase>& cases) {
    std::vector<GreedyRequest> requests;
    for (const GoldenCase& golden : cases) {
        requests.push_back({golden.prompt_ids, int64_t(golden.output_ids.size()) + 1, {1}});
    }
    // Each case stops either on BOS or at exactly its golden length.
    for (size_t i = 0; i < cases.size(); ++i)
        requests[i].max_new_tokens = int64_t(cases[i].output_ids.size());
    requests[1].max_new_tokens += 1;  // bos_only_full: one more step, which must be the BOS stop
    return requests;
}

std::vector<GreedyRequest> qwen_requests(const std::vector<GoldenCase>& cases) {
    std::vector<GreedyRequest> requests;
    for (const GoldenCase& golden : cases)
        requests.push_back({golden.prompt_ids, int64_t(golden.output_ids.size()), {}});
    return requests;
}

ModelRunnerConfig small_config(int64_t block_size) {
    ModelRunnerConfig config;
    config.max_num_seqs = 8;
    config.max_num_batched_tokens = 512;
    config.max_model_len = 512;
    config.block_size = block_size;
    config.kv_cache_memory_bytes = 64ll << 20;
    return config;
}

void expect_all_golden(const std::vector<GoldenCase>& cases,
                       const std::vector<std::vector<int32_t>>& outputs) {
    ASSERT_EQ(outputs.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(outputs[i], cases[i].output_ids) << "case " << cases[i].name;
    }
}

ModelRunnerConfig batch_config(int64_t block_size) {
    ModelRunnerConfig config = small_config(block_size);
    config.max_num_batched_tokens = 1024;
    return config;
}

}  // namespace lmrun::testing
