// Golden tests of the execution core: real checkpoints from ../shared/testdata
// run through CausalLM + ModelRunner over the paged KV cache must reproduce the
// greedy ids and logits of independent implementations.
#include "engine/model_runner.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/cpu_features.h"
#include "model/safetensors.h"
#include "numeric_test_util.h"
#include "runner_test_util.h"
#include "test_util.h"

namespace lmrun::testing {
namespace {

// An fp8 cache is slower than a BF16 one without AVX-512 (model_runner_setup.cpp): start-up
// says so then, and only then.
TEST(KvCacheDtype, Fp8WarnsOnlyWhereItsAttentionIsSlow) {
    const bool slow_fp8 = kernel_isa() < Isa::Avx512;
    for (const std::string kv : {"fp8_e4m3", "int8", "bfloat16"}) {
        ModelRunnerConfig config = small_config(16);
        config.kv_cache_dtype = kv;
        ::testing::internal::CaptureStderr();
        auto runner = make_runner(testdata_path("stories260k"), DType::F32, config);
        const std::string log = ::testing::internal::GetCapturedStderr();
        const bool warned = log.find("decode attention on an fp8 cache is slower") != std::string::npos;
        EXPECT_EQ(warned, kv == "fp8_e4m3" && slow_fp8) << kv << " at " << isa_name(kernel_isa()) << ":\n"
                                                        << log;
    }
}

class Stories260k : public ::testing::TestWithParam<int64_t> {};

TEST_P(Stories260k, GreedyGoldensOneByOneAndBatched) {
    const auto cases = load_cases("stories260k");
    ASSERT_EQ(cases.size(), 7u);
    auto runner = make_runner(testdata_path("stories260k"), DType::F32, small_config(GetParam()));
    auto requests = stories_requests(cases);
    std::vector<std::vector<int32_t>> one_by_one;
    for (const GreedyRequest& request : requests) one_by_one.push_back(run_greedy(*runner, {request})[0]);
    expect_all_golden(cases, one_by_one);
    expect_all_golden(cases, run_greedy(*runner, requests, /*batch_prefill=*/true));
    expect_all_golden(cases, run_greedy(*runner, requests, /*batch_prefill=*/false));
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, Stories260k, ::testing::Values(256, 16));

// BF16 weights perturb this model's logits by up to ~0.13 (measured against F32: rounding the
// weights, not the activations, dominates), more than the 0.01 of the listed low-margin steps,
// so a flip is accepted wherever the F32 model itself is that close to a tie: the F32 logit of
// the golden token may exceed the BF16 choice's by at most kBf16LogitError.
constexpr float kBf16LogitError = 0.15f;

TEST(Stories260kBf16, GoldenIdsExceptAtNearTies) {
    const auto cases = load_cases("stories260k");
    auto bf16 = make_runner(testdata_path("stories260k"), DType::BF16, small_config(16));
    auto f32 = make_runner(testdata_path("stories260k"), DType::F32, small_config(16));
    auto outputs = run_greedy(*bf16, stories_requests(cases));
    int num_identical = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& golden = cases[i].output_ids;
        ASSERT_GE(outputs[i].size(), 1u);
        size_t step = 0;
        while (step < golden.size() && step < outputs[i].size() && outputs[i][step] == golden[step]) ++step;
        if (step == golden.size()) {
            ++num_identical;
            continue;
        }
        ASSERT_LT(step, outputs[i].size()) << cases[i].name << " stopped early";
        // Teacher-force the F32 model up to the divergence and compare the two candidates there.
        std::vector<int32_t> ids = cases[i].prompt_ids;
        ids.insert(ids.end(), golden.begin(), golden.begin() + int64_t(step));
        int64_t next_block = f32->num_kv_blocks() - 1;
        auto blocks = take_blocks(next_block, int64_t(ids.size()), f32->block_size());
        RunnerSequence seq{ids, blocks, 0, int64_t(ids.size()), true, {}};
        auto logits = f32->compute_logits_at(seq, std::vector<int32_t>{int32_t(ids.size() - 1)});
        float gap = logits[golden[step]] - logits[outputs[i][step]];
        EXPECT_LT(gap, kBf16LogitError)
            << cases[i].name << " flips at step " << step << " with an F32 gap of " << gap;
    }
    // Batched decode (7 rows) rounds activations to BF16 as well, as prefill always did: 3 of
    // the 7 cases then run to the end without meeting a near-tie with our AVX512_BF16 GEMM, 2 with
    // oneDNN's AMX kernels (another summation order: prompt3 then flips at a 0.043 gap). Every
    // flip is still held to kBf16LogitError above; the count only guards against wholesale drift.
    EXPECT_GE(num_identical, 2);
}

// Reference rows: row t = logits after feeding input_ids[0..t].
struct ReferenceLogits {
    std::vector<int32_t> input_ids;
    std::vector<int32_t> rows;  // which positions have a stored row
    std::vector<float> logits;  // [rows, vocab]
};

ReferenceLogits load_reference(const std::string& model, const std::string& name, bool all_rows) {
    auto file = SafetensorsFile::open(testdata_path(model + "/reference_logits.safetensors"));
    if (!file.ok()) throw std::runtime_error(file.error().message);
    auto read_i32 = [&](const std::string& tensor) {
        const TensorInfo* info = file->find(tensor);
        if (!info) throw std::runtime_error("missing " + tensor);
        const auto* data = static_cast<const int32_t*>(info->data);
        return std::vector<int32_t>(data, data + info->nbytes / 4);
    };
    ReferenceLogits reference;
    reference.input_ids = read_i32(name + ".input_ids");
    const TensorInfo* logits = file->find(name + ".logits_numpy_f64");
    const auto* data = static_cast<const float*>(logits->data);
    reference.logits.assign(data, data + logits->nbytes / 4);
    if (all_rows) {
        for (int32_t t = 0; t < int32_t(logits->shape[0]); ++t) reference.rows.push_back(t);
    } else {
        reference.rows = read_i32(name + ".logit_rows");
    }
    return reference;
}

// Logits of `rows` three ways: whole prefix at once, token-by-token decode, and
// prefill split at `split` (the second part reads the first from the cache).
void check_reference_logits(const std::string& model, const std::string& name, bool all_rows,
                            float tolerance) {
    ReferenceLogits reference = load_reference(model, name, all_rows);
    ModelRunnerConfig config = small_config(16);
    config.max_model_len = 512;
    config.max_num_seqs = 16;  // logits of up to 16 rows at once
    auto runner = make_runner(testdata_path(model), DType::F32, config);
    const int64_t vocab = runner->model().config().vocab_size;
    const int64_t length = reference.rows.back() + 1;
    int64_t next_block = runner->num_kv_blocks() - 1;
    std::vector<int32_t> blocks = take_blocks(next_block, length, runner->block_size());
    std::span<const int32_t> ids(reference.input_ids.data(), size_t(length));

    RunnerSequence whole{ids, blocks, 0, length, true, {}};
    auto prefill_logits = runner->compute_logits_at(whole, reference.rows);
    EXPECT_LT(max_abs_diff(prefill_logits, reference.logits), tolerance) << name << " prefill";

    const int64_t split = length / 2;
    RunnerSequence first_part{ids, blocks, 0, split, true, {}};
    runner->compute_logits_at(first_part, std::vector<int32_t>{int32_t(split - 1)});
    RunnerSequence second_part{ids, blocks, split, length - split, true, {}};
    for (size_t r = 0; r < reference.rows.size(); ++r) {
        if (reference.rows[r] < split) continue;
        std::vector<int32_t> row{int32_t(reference.rows[r] - split)};
        auto logits = runner->compute_logits_at(second_part, row);
        EXPECT_LT(max_abs_diff(logits, std::span(reference.logits).subspan(r * vocab, vocab)), tolerance)
            << name << " cached-prefix prefill, row " << reference.rows[r];
    }

    runner->set_keep_logits(true);
    size_t next_row = 0;
    for (int64_t position = 0; position < length; ++position) {
        RunnerSequence step{ids, blocks, position, 1, true, {}};
        runner->run(std::span(&step, 1));
        if (next_row < reference.rows.size() && reference.rows[next_row] == position) {
            EXPECT_LT(max_abs_diff(runner->last_logits(),
                                   std::span(reference.logits).subspan(next_row * vocab, vocab)),
                      tolerance)
                << name << " decode, position " << position;
            ++next_row;
        }
    }
    EXPECT_EQ(next_row, reference.rows.size());
}

TEST(Stories260kLogits, MatchNumpyReferencePrefillAndDecode) {
    check_reference_logits("stories260k", "bos_only_200", true, 1e-4f);
    check_reference_logits("stories260k", "prompt2", true, 1e-4f);
}

TEST(Qwen3Tiny, GreedyGoldensBatched) {
    const auto cases = load_cases("qwen3-tiny");
    auto runner = make_runner(testdata_path("qwen3-tiny"), DType::F32, batch_config(256));
    expect_all_golden(cases, run_greedy(*runner, qwen_requests(cases)));
}

TEST(Qwen3Tiny, GreedyGoldensOneByOneBlockSize16) {
    const auto cases = load_cases("qwen3-tiny");
    auto runner = make_runner(testdata_path("qwen3-tiny"), DType::F32, small_config(16));
    auto requests = qwen_requests(cases);
    for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(run_greedy(*runner, {requests[i]})[0], cases[i].output_ids) << cases[i].name;
    }
}

TEST(Qwen3Tiny, LogitsMatchReference) {
    check_reference_logits("qwen3-tiny", "short_en", false, 1e-3f);
    check_reference_logits("qwen3-tiny", "long_prefill_300", false, 1e-3f);
}

TEST(Qwen2Tiny, GreedyGoldensBatched) {
    const auto cases = load_cases("qwen2-tiny");
    auto runner = make_runner(testdata_path("qwen2-tiny"), DType::F32, batch_config(16));
    expect_all_golden(cases, run_greedy(*runner, qwen_requests(cases)));
}

TEST(Qwen2Tiny, LogitsMatchReference) {
    check_reference_logits("qwen2-tiny", "short_en", false, 1e-3f);
    check_reference_logits("qwen2-tiny", "long_prefill_300", false, 1e-3f);
}

}  // namespace
}  // namespace lmrun::testing
