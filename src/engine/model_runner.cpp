#include "engine/model_runner.h"

#include <algorithm>

#include "core/check.h"
#include "core/logging.h"
#include "core/memory_info.h"
#include "core/op_profiler.h"
#include "core/timer.h"
#include "parallel/step_message.h"

namespace lmrun {

StepInputs::StepInputs(int64_t max_tokens, int64_t max_seqs, int64_t max_blocks_per_seq)
    : input_ids(size_t(max_tokens)),
      positions(size_t(max_tokens)),
      slot_mapping(size_t(max_tokens)),
      cu_seqlens_q(size_t(max_seqs + 1)),
      context_lens(size_t(max_seqs)),
      block_tables(size_t(max_seqs * max_blocks_per_seq)),
      logit_rows(size_t(max_seqs)) {}

namespace {
// Points the context at the step's input buffers.
void bind_inputs(const StepInputs& inputs, ForwardContext& context) {
    context.input_ids = inputs.input_ids.data();
    context.positions = inputs.positions.data();
    context.cu_seqlens_q = inputs.cu_seqlens_q.data();
    context.slot_mapping = inputs.slot_mapping.data();
    context.context_lens = inputs.context_lens.data();
    context.block_tables = inputs.block_tables.data();
}
}  // namespace

std::vector<int64_t> ModelRunner::decode_buckets(int64_t max_num_seqs) {
    // nano-vLLM's graph_bs: 1, 2, 4, 8, then steps of 16.
    std::vector<int64_t> buckets;
    for (int64_t size : {1, 2, 4, 8}) {
        if (size < max_num_seqs) buckets.push_back(size);
    }
    for (int64_t size = 16; size < max_num_seqs; size += 16) buckets.push_back(size);
    buckets.push_back(max_num_seqs);
    return buckets;
}

ModelRunner::ModelRunner(std::unique_ptr<CausalLM> model, const ModelRunnerConfig& config,
                         parallel::ProcessGroup& group)
    : model_(std::move(model)),
      config_(config),
      group_(group),
      max_blocks_per_seq_((config.max_model_len + config.block_size - 1) / config.block_size),
      buffers_(model_->config(), std::max(config.max_num_batched_tokens, config.max_num_seqs),
               config.max_num_seqs, model_->num_heads_local(), model_->num_kv_heads_local(),
               model_->intermediate_local(), group.size() > 1 ? model_->vocab_local() : 0, group.rank() == 0),
      sampler_(model_->config().vocab_size, config.max_num_seqs),
      prefill_inputs_(std::max(config.max_num_batched_tokens, config.max_num_seqs), config.max_num_seqs,
                      max_blocks_per_seq_),
      sampling_inputs_(size_t(config.max_num_seqs)),
      sample_results_(size_t(config.max_num_seqs)) {
    if (config_.use_decode_plans) {
        for (int64_t bucket : decode_buckets(config.max_num_seqs)) {
            decode_plans_.push_back(DecodePlan{bucket, StepInputs(bucket, bucket, max_blocks_per_seq_)});
        }
    }
    if (group_.size() > 1 && group_.rank() == 0) {
        step_message_.resize(
            parallel::max_step_message_bytes(std::max(config.max_num_batched_tokens, config.max_num_seqs),
                                             config.max_num_seqs, max_blocks_per_seq_));
    }
}

Result<ModelRunnerConfig> resolve_runner_config(const ModelRunnerConfig& requested,
                                                const ModelConfig& model_config) {
    ModelRunnerConfig config = requested;
    if (config.max_model_len <= 0) config.max_model_len = model_config.max_position_embeddings;
    if (config.max_model_len > model_config.max_position_embeddings) {
        return make_error("max_model_len {} exceeds the model's max_position_embeddings {}",
                          config.max_model_len, model_config.max_position_embeddings);
    }
    if (config.block_size <= 0 || config.max_num_seqs <= 0 || config.max_num_batched_tokens <= 0) {
        return make_error("block_size, max_num_seqs and max_num_batched_tokens must be positive");
    }
    return config;
}

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(std::unique_ptr<CausalLM> model,
                                                         const ModelRunnerConfig& requested,
                                                         parallel::ProcessGroup& group) {
    LMRUN_ASSIGN_OR_RETURN(ModelRunnerConfig config, resolve_runner_config(requested, model->config()));
    const ModelConfig& model_config = model->config();
    // The step buffers and the sampler's scratch (ids, probabilities, flags per vocab entry and
    // sequence) are allocated once, for the largest step: refuse sizes the machine cannot hold.
    const int64_t max_tokens = std::max(config.max_num_batched_tokens, config.max_num_seqs);
    const double step_bytes = ActivationBuffers::planned_nbytes(
                                  model_config, max_tokens, config.max_num_seqs, model->num_heads_local(),
                                  model->num_kv_heads_local(), model->intermediate_local()) +
                              9.0 * double(model_config.vocab_size) * double(config.max_num_seqs);
    const int64_t available = available_memory_bytes();
    if (step_bytes > double(available)) {
        constexpr double kGiB = double(int64_t(1) << 30);
        return make_error(
            ErrorKind::ResourceExhausted,
            "max_num_seqs {} and max_num_batched_tokens {} need {:.1f} GiB of step buffers, {:.1f} "
            "GiB available",
            config.max_num_seqs, config.max_num_batched_tokens, step_bytes / kGiB, double(available) / kGiB);
    }
    const double start_s = now_seconds();
    std::unique_ptr<ModelRunner> runner(new ModelRunner(std::move(model), config, group));
    const double built_s = now_seconds();
    LMRUN_RETURN_IF_ERROR(runner->allocate_kv_cache());
    log_debug(
        "runner: step buffers, sampler and decode plans in {:.0f} ms, KV cache and workspaces in {:.0f} ms",
        1e3 * (built_s - start_s), 1e3 * (now_seconds() - built_s));
    return runner;
}

ForwardContext ModelRunner::prepare_prefill(std::span<const RunnerSequence> seqs, StepInputs& inputs) const {
    const int64_t block_size = config_.block_size;
    ForwardContext context;
    context.num_seqs = int64_t(seqs.size());
    context.max_blocks_per_seq = max_blocks_per_seq_;
    int64_t token = 0;
    int64_t num_logit_rows = 0;
    inputs.cu_seqlens_q[0] = 0;
    for (size_t s = 0; s < seqs.size(); ++s) {
        const RunnerSequence& seq = seqs[s];
        const int64_t context_len = seq.num_computed_tokens + seq.num_new_tokens;
        LMRUN_CHECK(context_len <= int64_t(seq.block_table.size()) * block_size, "block table too short");
        LMRUN_CHECK(int64_t(seq.block_table.size()) <= max_blocks_per_seq_,
                    "sequence longer than max_model_len");
        for (int64_t position = seq.num_computed_tokens; position < context_len; ++position, ++token) {
            inputs.input_ids[token] = seq.token_ids[position];
            inputs.positions[token] = int32_t(position);
            inputs.slot_mapping[token] =
                int32_t(seq.block_table[position / block_size] * block_size + position % block_size);
        }
        inputs.cu_seqlens_q[s + 1] = int32_t(token);
        inputs.context_lens[s] = int32_t(context_len);
        std::copy(seq.block_table.begin(), seq.block_table.end(),
                  inputs.block_tables.begin() + std::ptrdiff_t(s * max_blocks_per_seq_));
        if (seq.sample) inputs.logit_rows[num_logit_rows++] = int32_t(token - 1);
    }
    context.num_tokens = context.num_padded_tokens = token;
    bind_inputs(inputs, context);
    return context;
}

// Real sequences fill the first rows; padding rows carry token 0 at position 0,
// store nothing (slot -1) and are left out of attention and sampling.
ForwardContext ModelRunner::prepare_decode(std::span<const RunnerSequence> seqs, DecodePlan& plan) const {
    const int64_t block_size = config_.block_size;
    StepInputs& inputs = plan.inputs;
    const int64_t num_seqs = int64_t(seqs.size());
    ForwardContext context;
    context.linear_path = LinearPath::AllocationFree;
    context.num_seqs = num_seqs;
    context.num_tokens = num_seqs;
    context.num_padded_tokens = plan.batch_size;
    context.max_blocks_per_seq = max_blocks_per_seq_;
    inputs.cu_seqlens_q[0] = 0;
    for (int64_t s = 0; s < plan.batch_size; ++s) {
        if (s >= num_seqs) {
            inputs.input_ids[s] = 0;
            inputs.positions[s] = 0;
            inputs.slot_mapping[s] = -1;
            inputs.logit_rows[s] = int32_t(s);
            continue;
        }
        const RunnerSequence& seq = seqs[s];
        const int64_t position = seq.num_computed_tokens;
        inputs.input_ids[s] = seq.token_ids[position];
        inputs.positions[s] = int32_t(position);
        inputs.slot_mapping[s] =
            int32_t(seq.block_table[position / block_size] * block_size + position % block_size);
        inputs.context_lens[s] = int32_t(position + 1);
        inputs.cu_seqlens_q[s + 1] = int32_t(s + 1);
        std::copy(seq.block_table.begin(), seq.block_table.end(),
                  inputs.block_tables.begin() + s * max_blocks_per_seq_);
        inputs.logit_rows[s] = int32_t(s);
    }
    bind_inputs(inputs, context);
    return context;
}

DecodePlan* ModelRunner::find_plan(int64_t num_seqs) {
    for (DecodePlan& plan : decode_plans_) {
        if (plan.batch_size >= num_seqs) return &plan;
    }
    return nullptr;
}

std::span<const SampleResult> ModelRunner::run(std::span<const RunnerSequence> seqs) {
    LMRUN_CHECK(int64_t(seqs.size()) <= config_.max_num_seqs, "more sequences than max_num_seqs");
    if (std::this_thread::get_id() != workspace_thread_)
        reserve_step_workspace();  // e.g. a server's engine thread
    bool decode_only = std::all_of(seqs.begin(), seqs.end(), [](const RunnerSequence& seq) {
        return seq.num_new_tokens == 1 && seq.sample;
    });
    DecodePlan* plan = decode_only ? find_plan(int64_t(seqs.size())) : nullptr;
    if (plan) {
        ForwardContext context = [&] {
            ScopedOp scope(Op::PrepareInputs);
            return prepare_decode(seqs, *plan);
        }();
        return compute_and_sample(context, seqs,
                                  std::span<const int32_t>(plan->inputs.logit_rows.data(), plan->batch_size));
    }
    ForwardContext context = [&] {
        ScopedOp scope(Op::PrepareInputs);
        return prepare_prefill(seqs, prefill_inputs_);
    }();
    LMRUN_CHECK(context.num_tokens <= buffers_.max_num_tokens,
                "step has more tokens than max_num_batched_tokens");
    int64_t num_sampled = std::count_if(seqs.begin(), seqs.end(), [](const auto& seq) { return seq.sample; });
    return compute_and_sample(context, seqs,
                              std::span<const int32_t>(prefill_inputs_.logit_rows.data(), num_sampled));
}

void ModelRunner::execute(const ForwardContext& context, std::span<const int32_t> logit_rows) {
    if (group_.size() > 1) {
        ScopedOp scope(Op::PrepareInputs);
        const size_t bytes = parallel::encode_step(context, logit_rows, step_message_);
        group_.broadcast(std::span<const std::byte>(step_message_.data(), bytes));
    }
    model_->forward(context, kv_cache_->layers(), buffers_);
    if (!logit_rows.empty()) model_->compute_logits(logit_rows, buffers_, context.linear_path);
}

bool ModelRunner::run_worker_step() {
    LMRUN_CHECK(group_.rank() != 0, "rank 0 drives the steps");
    std::span<const std::byte> message = group_.broadcast({});
    if (group_.failed()) return false;
    const parallel::ReceivedStep step = parallel::decode_step(message);
    if (step.kind != parallel::MessageKind::Step) return false;
    if (std::this_thread::get_id() != workspace_thread_)
        reserve_step_workspace();  // a worker serving steps from another thread than start-up's
    model_->forward(step.context, kv_cache_->layers(), buffers_);
    if (!step.logit_rows.empty()) model_->compute_logits(step.logit_rows, buffers_, step.context.linear_path);
    return !group_.failed();
}

void ModelRunner::shutdown_workers() {
    if (group_.size() > 1 && group_.rank() == 0) group_.broadcast(parallel::shutdown_message());
}

std::span<const SampleResult> ModelRunner::compute_and_sample(const ForwardContext& context,
                                                              std::span<const RunnerSequence> seqs,
                                                              std::span<const int32_t> logit_rows) {
    execute(context, logit_rows);
    if (logit_rows.empty() || group_.failed()) return {};
    ScopedOp scope(Op::Sampling);
    int64_t num_sampled = 0;
    for (const RunnerSequence& seq : seqs) {
        if (seq.sample) sampling_inputs_[num_sampled++] = seq.sampling;
    }
    const int64_t vocab = model_->config().vocab_size;
    if (keep_logits_) {
        const float* logits = buffers_.logits.data<float>();
        kept_logits_.assign(logits, logits + num_sampled * vocab);
    }
    std::span<SampleResult> results(sample_results_.data(), size_t(num_sampled));
    sampler_.sample(buffers_.logits.data<float>(),
                    std::span<const SamplingInputs>(sampling_inputs_.data(), size_t(num_sampled)), results);
    return results;
}

}  // namespace lmrun

namespace lmrun {

std::span<const float> ModelRunner::compute_logits_at(const RunnerSequence& seq,
                                                      std::span<const int32_t> rows) {
    LMRUN_CHECK(int64_t(rows.size()) <= config_.max_num_seqs, "too many logit rows");
    ForwardContext context = prepare_prefill(std::span(&seq, 1), prefill_inputs_);
    execute(context, rows);
    return std::span<const float>(buffers_.logits.data<float>(), rows.size() * model_->config().vocab_size);
}

void ModelRunner::score_rows(const RunnerSequence& seq, int64_t first_row, const RowLogitsFn& on_rows) {
    ForwardContext context = prepare_prefill(std::span(&seq, 1), prefill_inputs_);
    LMRUN_CHECK(context.num_tokens <= buffers_.max_num_tokens,
                "step has more tokens than max_num_batched_tokens");
    model_->forward(context, kv_cache_->layers(), buffers_);
    const int64_t vocab = model_->config().vocab_size;
    std::vector<int32_t> rows;
    for (int64_t first = first_row; first < seq.num_new_tokens; first += config_.max_num_seqs) {
        const int64_t count = std::min(config_.max_num_seqs, seq.num_new_tokens - first);
        rows.resize(size_t(count));
        for (int64_t i = 0; i < count; ++i) rows[i] = int32_t(first + i);
        model_->compute_logits(rows, buffers_);
        on_rows(first, count, std::span<const float>(buffers_.logits.data<float>(), size_t(count * vocab)));
    }
}

}  // namespace lmrun
