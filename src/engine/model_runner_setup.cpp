// Start-up of the ModelRunner: a warm-up forward at the largest step shape and
// at every decode bucket (so kernels build their plans and scratch now, not
// during serving), then the KV cache sized from what memory is left.
#include <algorithm>

#include "core/logging.h"
#include "core/memory_info.h"
#include "engine/model_runner.h"

namespace lmrun {

void ModelRunner::warm_up(const KvCache& cache) {
    const int64_t block_size = config_.block_size;
    // Largest prefill: one sequence of max_num_batched_tokens tokens (capped by max_model_len).
    const int64_t prefill_tokens = std::min(config_.max_num_batched_tokens, config_.max_model_len);
    std::vector<int32_t> token_ids(size_t(prefill_tokens), 0);
    std::vector<int32_t> block_table(size_t((prefill_tokens + block_size - 1) / block_size));
    for (size_t i = 0; i < block_table.size(); ++i) block_table[i] = int32_t(i);
    RunnerSequence prefill{token_ids, block_table, 0, prefill_tokens, true, SamplingInputs{}};
    ForwardContext context = prepare_prefill(std::span(&prefill, 1), prefill_inputs_);
    std::vector<int32_t> all_rows(size_t(config_.max_num_seqs), 0);
    model_->forward(context, cache.layers(), buffers_);
    model_->compute_logits(all_rows, buffers_);

    // Every decode bucket, with its padding shape, so each GEMM shape is prepared once here.
    // Nothing is stored (slot -1) and every sequence reads block 0.
    for (DecodePlan& plan : decode_plans_) {
        std::vector<RunnerSequence> seqs(size_t(plan.batch_size),
                                         RunnerSequence{token_ids, block_table, 0, 1, true, {}});
        ForwardContext decode = prepare_decode(seqs, plan);
        std::fill(plan.inputs.slot_mapping.begin(), plan.inputs.slot_mapping.end(), -1);
        model_->forward(decode, cache.layers(), buffers_);
        model_->compute_logits(std::span<const int32_t>(plan.inputs.logit_rows.data(), plan.batch_size),
                               buffers_, decode.linear_path);
    }
}

Status ModelRunner::allocate_kv_cache() {
    const ModelConfig& model_config = model_->config();
    KvCacheShape shape;
    shape.num_layers = model_config.num_hidden_layers;
    shape.block_size = config_.block_size;
    shape.num_kv_heads = model_->num_kv_heads_local();
    shape.head_dim = model_config.head_dim;
    LMRUN_ASSIGN_OR_RETURN(shape.dtype,
                           resolve_kv_cache_dtype(config_.kv_cache_dtype, model_->weight_dtype()));

    reset_peak_resident_memory();  // the peak of loading (staged weights) is not the activations'
    const int64_t rss_before = resident_memory_bytes();
    {
        KvCacheShape warmup_shape = shape;
        warmup_shape.num_blocks =
            std::min(config_.max_num_batched_tokens, config_.max_model_len) / config_.block_size + 2;
        KvCache warmup_cache(warmup_shape);
        warm_up(warmup_cache);
    }
    // Buffers were filled at construction; the warm-up adds what the kernels allocate for themselves.
    activation_bytes_ =
        int64_t(buffers_.nbytes()) + std::max<int64_t>(0, peak_resident_memory_bytes() - rss_before);

    const int64_t bytes_per_block = shape.bytes_per_block();
    int64_t budget = config_.kv_cache_memory_bytes;
    const int64_t available = available_memory_bytes();
    if (budget > available) {
        constexpr double kGiB = double(int64_t(1) << 30);
        return make_error(ErrorKind::ResourceExhausted,
                          "a KV cache of {:.1f} GiB was asked for, {:.1f} GiB available",
                          double(budget) / kGiB, double(available) / kGiB);
    }
    if (budget <= 0) budget = int64_t(double(available) * config_.kv_cache_memory_fraction);
    // No more blocks than max_num_seqs sequences of max_model_len tokens could ever use.
    const int64_t useful_blocks = config_.max_num_seqs * max_blocks_per_seq_;
    shape.num_blocks = std::min(budget / bytes_per_block, useful_blocks);
    if (shape.num_blocks < 1) {
        return make_error(ErrorKind::ResourceExhausted,
                          "KV cache budget of {} bytes is smaller than one block ({} bytes of {} tokens)",
                          budget, bytes_per_block, config_.block_size);
    }
    kv_cache_ = std::make_unique<KvCache>(shape);
    log_info(
        "KV cache: {} blocks x {} tokens = {} tokens, {:.1f} MiB ({}, budget {:.1f} MiB); activations {:.1f} "
        "MiB",
        shape.num_blocks, shape.block_size, shape.num_blocks * shape.block_size,
        double(shape.total_bytes()) / (1 << 20), dtype_name(shape.dtype), double(budget) / (1 << 20),
        double(activation_bytes_) / (1 << 20));
    return ok_status();
}

}  // namespace lmrun
