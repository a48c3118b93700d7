// Start-up of the ModelRunner: a warm-up forward at the largest step shape and
// at every decode bucket (so kernels build their plans and scratch now, not
// during serving), then the KV cache sized from what memory is left. Every rank of a
// tensor-parallel group runs the same warm-up (its collectives included) and the ranks
// agree on one block count, the smallest any of them can hold.
#include <algorithm>
#include <cstring>

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
    shape.dtype = model_->weight_dtype();  // F32 models keep an F32 cache; BF16 models a BF16 one

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
    // The budget is for the whole cache: a block costs bytes_per_block on each of the ranks, and
    // the ranks of this machine share its available memory.
    int64_t budget = config_.kv_cache_memory_bytes;
    int64_t ranks_paying = group_.size();
    const int64_t available = available_memory_bytes();
    if (budget > available) {
        constexpr double kGiB = double(int64_t(1) << 30);
        return make_error(ErrorKind::ResourceExhausted,
                          "a KV cache of {:.1f} GiB was asked for, {:.1f} GiB available",
                          double(budget) / kGiB, double(available) / kGiB);
    }
    if (budget <= 0) {
        budget = int64_t(double(available) * config_.kv_cache_memory_fraction);
        ranks_paying = config_.ranks_sharing_memory;
    }
    // No more blocks than max_num_seqs sequences of max_model_len tokens could ever use.
    const int64_t useful_blocks = config_.max_num_seqs * max_blocks_per_seq_;
    shape.num_blocks =
        agree_on_num_blocks(std::min(budget / (bytes_per_block * ranks_paying), useful_blocks));
    if (group_.failed())
        return make_error(ErrorKind::Unavailable, "a tensor-parallel rank failed during start-up");
    if (shape.num_blocks < 1) {
        return make_error(ErrorKind::ResourceExhausted,
                          "KV cache budget of {} bytes is smaller than one block ({} bytes of {} tokens)",
                          budget, bytes_per_block, config_.block_size);
    }
    kv_cache_ = std::make_unique<KvCache>(shape);
    if (group_.rank() != 0) return ok_status();
    log_info(
        "KV cache: {} blocks x {} tokens = {} tokens, {:.1f} MiB ({}, budget {:.1f} MiB); activations {:.1f} "
        "MiB",
        shape.num_blocks, shape.block_size, shape.num_blocks * shape.block_size,
        double(shape.total_bytes()) / (1 << 20), dtype_name(shape.dtype), double(budget) / (1 << 20),
        double(activation_bytes_) / (1 << 20));
    return ok_status();
}

// The smallest of every rank's count: rank 0 gathers them and broadcasts the minimum.
int64_t ModelRunner::agree_on_num_blocks(int64_t num_blocks) {
    if (group_.size() == 1) return num_blocks;
    std::vector<int64_t> counts(size_t(group_.size()), 0);
    group_.gather(&num_blocks, sizeof(num_blocks), counts.data());
    const int64_t smallest = *std::min_element(counts.begin(), counts.end());
    std::span<const std::byte> agreed = group_.broadcast(
        group_.rank() == 0 ? std::as_bytes(std::span(&smallest, 1)) : std::span<const std::byte>());
    if (agreed.size() != sizeof(int64_t)) return 0;
    int64_t result = 0;
    std::memcpy(&result, agreed.data(), sizeof(result));
    return result;
}

}  // namespace lmrun
