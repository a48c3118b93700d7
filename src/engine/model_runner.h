// The ModelRunner decides HOW a scheduled step runs (nano-vLLM's model_runner):
// it turns a batch of sequences into input_ids, positions, cu_seqlens,
// slot_mapping, block_tables and context_lens, runs the model over the paged KV
// cache, computes logits for the last position of each sequence that samples,
// and samples one token for each.
//
// Decode-only steps are padded to a batch-size bucket (1, 2, 4, 8, 16, 32, ...)
// and replayed from a DecodePlan whose input buffers were allocated, and whose
// kernel scratch was reserved from the shapes, at start-up (and again on the
// first step from another thread, since that scratch is per thread): a decode
// step allocates nothing.
//
// Tensor parallelism: every rank runs a ModelRunner over its shard of the model and of the
// KV cache, in the same process group. Rank 0 (driven by the engine) prepares each step and
// broadcasts its inputs (step_message.h) before running it; the other ranks only receive
// and run steps (run_worker_step). All ranks compute the logits of their vocab columns;
// rank 0 gathers them and alone samples.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "core/result.h"
#include "engine/kv_cache.h"
#include "engine/sampler.h"
#include "model/causal_lm.h"
#include "parallel/process_group.h"
#include "parallel/single_process_group.h"

namespace lmrun {

// The KV budget when none is given: min(4 GiB, half of available_bytes).
int64_t default_kv_cache_budget_bytes(int64_t available_bytes);

struct ModelRunnerConfig {
    int64_t max_num_seqs = 64;
    int64_t max_num_batched_tokens = 2048;
    int64_t max_model_len = 0;  // 0 = the model's max_position_embeddings
    int64_t block_size = 256;
    int64_t kv_cache_memory_bytes = 0;    // > 0: KV budget (an upper bound: pages are committed on use)
    double kv_cache_memory_fraction = 0;  // else if > 0: this fraction of available RAM
                                          // else: default_kv_cache_budget_bytes() (4 GiB, as vLLM CPU)
    bool use_decode_plans = true;         // false: run decode steps like prefill (for comparison tests)
    std::string kv_cache_dtype = "auto";  // resolve_kv_cache_dtype (kv_cache.h)
    // Tensor parallelism: a budget in bytes is for the whole cache, all ranks together; the
    // fraction and the default are per machine, shared by the ranks on it.
    int ranks_sharing_memory = 1;
};

// A config with max_model_len resolved against the model; an error names a bad limit.
Result<ModelRunnerConfig> resolve_runner_config(const ModelRunnerConfig& config,
                                                const ModelConfig& model_config);

// One sequence of a step, as the runner needs it.
struct RunnerSequence {
    std::span<const int32_t> token_ids;    // every token known so far
    std::span<const int32_t> block_table;  // KV blocks covering at least num_computed + num_new tokens
    int64_t num_computed_tokens = 0;       // KV already in the cache
    int64_t num_new_tokens = 0;            // compute token_ids[num_computed, num_computed + num_new)
    bool sample = true;                    // produce a token (false for a non-final prefill chunk)
    SamplingInputs sampling;
};

// Input buffers of one step shape, allocated once.
struct StepInputs {
    StepInputs(int64_t max_tokens, int64_t max_seqs, int64_t max_blocks_per_seq);
    std::vector<int32_t> input_ids, positions, slot_mapping;
    std::vector<int32_t> cu_seqlens_q, context_lens, block_tables;
    std::vector<int32_t> logit_rows;
};

struct DecodePlan {
    int64_t batch_size;
    StepInputs inputs;
};

class ModelRunner {
  public:
    // `group`: the tensor-parallel group the model was loaded for (its collectives run inside
    // create(): the KV cache size all ranks agree on).
    static Result<std::unique_ptr<ModelRunner>> create(
        std::unique_ptr<CausalLM> model, const ModelRunnerConfig& config,
        parallel::ProcessGroup& group = parallel::single_process_group());

    // Rank 0: runs one step on every rank. Returns one result per sequence with sample == true,
    // in order; the span stays valid until the next call. If the group failed meanwhile, the
    // results are meaningless: check group().failed().
    std::span<const SampleResult> run(std::span<const RunnerSequence> seqs);
    // Ranks > 0: receives and runs rank 0's next step; false once rank 0 shut the group down or
    // the group failed.
    bool run_worker_step();
    // Rank 0: tells the other ranks' run_worker_step() to return false.
    void shutdown_workers();
    // Logits of the last step's sampled rows ([num_sampled, vocab]), before sampling altered them
    // only if `keep_logits` was set; for tests and debugging.
    void set_keep_logits(bool keep) { keep_logits_ = keep; }
    std::span<const float> last_logits() const { return kept_logits_; }

    // Logits at chosen rows of one sequence's new tokens (rows index into its num_new_tokens),
    // [rows, vocab]; at most max_num_seqs rows. For tests that compare every position.
    std::span<const float> compute_logits_at(const RunnerSequence& seq, std::span<const int32_t> rows);
    // Runs seq's new tokens (a prefill chunk, nothing sampled) and hands the logits of every row
    // from `first_row` on to on_rows(first, count, logits [count, vocab]), max_num_seqs rows at a
    // time. For scoring text (perplexity).
    using RowLogitsFn = std::function<void(int64_t first, int64_t count, std::span<const float> logits)>;
    void score_rows(const RunnerSequence& seq, int64_t first_row, const RowLogitsFn& on_rows);

    const CausalLM& model() const { return *model_; }
    const ModelRunnerConfig& config() const { return config_; }
    int64_t num_kv_blocks() const { return kv_cache_->shape().num_blocks; }
    int64_t block_size() const { return config_.block_size; }
    int64_t max_blocks_per_seq() const { return max_blocks_per_seq_; }
    const KvCacheShape& kv_cache_shape() const { return kv_cache_->shape(); }
    const KvCache& kv_cache() const { return *kv_cache_; }
    int64_t activation_bytes() const { return activation_bytes_; }
    parallel::ProcessGroup& group() const { return group_; }
    static std::vector<int64_t> decode_buckets(int64_t max_num_seqs);

  private:
    ModelRunner(std::unique_ptr<CausalLM> model, const ModelRunnerConfig& config,
                parallel::ProcessGroup& group);
    Status allocate_kv_cache();
    // Logs a warning when the KV cache dtype is one this CPU's attention kernels run slowly.
    void warn_if_slow_kv_dtype(DType kv_dtype) const;
    int64_t agree_on_num_blocks(int64_t num_blocks);
    // Rank 0: sends the step to the other ranks, then runs the forward pass and the logits of `logit_rows`.
    void execute(const ForwardContext& context, std::span<const int32_t> logit_rows);
    void reserve_step_workspace();
    ForwardContext prepare_prefill(std::span<const RunnerSequence> seqs, StepInputs& inputs) const;
    ForwardContext prepare_decode(std::span<const RunnerSequence> seqs, DecodePlan& plan) const;
    DecodePlan* find_plan(int64_t num_seqs);
    std::span<const SampleResult> compute_and_sample(const ForwardContext& context,
                                                     std::span<const RunnerSequence> seqs,
                                                     std::span<const int32_t> logit_rows);

    std::unique_ptr<CausalLM> model_;
    ModelRunnerConfig config_;
    parallel::ProcessGroup& group_;
    std::vector<std::byte> step_message_;  // rank 0's encoded step, allocated once
    int64_t max_blocks_per_seq_ = 0;
    ActivationBuffers buffers_;
    Sampler sampler_;
    StepInputs prefill_inputs_;
    std::vector<DecodePlan> decode_plans_;
    std::vector<SamplingInputs> sampling_inputs_;
    std::vector<SampleResult> sample_results_;
    std::unique_ptr<KvCache> kv_cache_;
    int64_t activation_bytes_ = 0;
    std::thread::id workspace_thread_;  // the thread whose kernel scratch is reserved
    bool keep_logits_ = false;
    std::vector<float> kept_logits_;
};

}  // namespace lmrun
