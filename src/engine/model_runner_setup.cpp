// Start-up of the ModelRunner. Nothing here runs the model: the kernels' scratch
// is reserved from the shapes (what the largest decode bucket and the largest
// step need), the activation peak is the sum of buffers sized from the shapes,
// and the KV cache arena is only reserved address space, committed by the OS as
// blocks are first written. Start-up therefore costs the same whatever
// max_num_batched_tokens and the KV budget are.
// Every rank of a tensor-parallel group does the same for its shard (its own kernel scratch,
// its own KV arena for its heads), and the ranks agree on one block count, the smallest any
// of them can hold.
#include <algorithm>
#include <cstring>

#include "core/cpu_features.h"
#include "core/logging.h"
#include "core/memory_info.h"
#include "engine/model_runner.h"

namespace lmrun {

void ModelRunner::reserve_step_workspace() {
    // Decode plans run up to max_num_seqs rows on the allocation-free path (the largest bucket);
    // prefill steps may allocate (oneDNN builds primitives per row count on first use).
    model_->reserve_workspace(decode_plans_.empty() ? 0 : decode_plans_.back().batch_size,
                              config_.max_num_seqs);
    workspace_thread_ = std::this_thread::get_id();
}

int64_t default_kv_cache_budget_bytes(int64_t available_bytes) {
    // vLLM's CPU backend reserves VLLM_CPU_KVCACHE_SPACE = 4 GiB unless told otherwise: a fixed
    // figure a user can reason about, rather than a fraction of whatever RAM is free. Pages are
    // committed on use, so the budget is an upper bound; on a small machine it is capped at half
    // of what is available so that a full cache cannot push the weights out.
    constexpr int64_t kDefaultBytes = int64_t(4) << 30;
    return std::min(kDefaultBytes, available_bytes / 2);
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

    reserve_step_workspace();
    // The activation buffers are sized for the largest step at construction; their pages are
    // committed as steps use them.
    activation_bytes_ = int64_t(buffers_.nbytes());

    const int64_t bytes_per_block = shape.bytes_per_block();
    // The budget is for the whole cache: a block costs bytes_per_block on each of the ranks, and
    // the ranks of this machine share its available memory.
    int64_t budget = config_.kv_cache_memory_bytes;
    int64_t ranks_paying = group_.size();
    const int64_t available = available_memory_bytes();
    if (budget > available) {
        // Pages are committed on use, but a bound the machine cannot hold would end in the OOM killer.
        constexpr double kGiB = double(int64_t(1) << 30);
        return make_error(ErrorKind::ResourceExhausted,
                          "a KV cache of {:.1f} GiB was asked for, {:.1f} GiB available",
                          double(budget) / kGiB, double(available) / kGiB);
    }
    if (budget <= 0 && config_.kv_cache_memory_fraction > 0) {
        budget = int64_t(double(available) * config_.kv_cache_memory_fraction);
        ranks_paying = config_.ranks_sharing_memory;
    }
    if (budget <= 0) {
        // Like the fraction, the default is a figure for this machine, shared by its ranks.
        budget = default_kv_cache_budget_bytes(available);
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
    LMRUN_ASSIGN_OR_RETURN(kv_cache_, KvCache::create(shape));
    if (group_.rank() != 0) return ok_status();
    log_info(
        "KV cache: {} blocks x {} tokens = {} tokens ({}), {:.1f} MiB reserved of a {:.1f} MiB budget, "
        "{:.1f} MiB resident (committed as blocks are used); activations {:.1f} MiB",
        shape.num_blocks, shape.block_size, shape.num_blocks * shape.block_size, dtype_name(shape.dtype),
        double(kv_cache_->reserved_bytes()) / (1 << 20), double(budget) / (1 << 20),
        double(kv_cache_->resident_bytes()) / (1 << 20), double(activation_bytes_) / (1 << 20));
    warn_if_slow_kv_dtype(shape.dtype);
    return ok_status();
}

// An fp8 cache holds as many tokens as an int8 one, but without AVX-512 its decode attention is
// bound by turning bytes into floats, not by reading them: the AVX2 tile widens fp8 rows through
// F16C (an unpack, a shift, a mask, a vcvtph2ps and a multiply per 8 values, then a store the
// FMAs read back), where BF16 takes one unpack per 8 in registers. Zen 3 (EPYC, family 25 model
// 1), `lmrun bench --profile`, int8 weights, decode batch 8 at 1024 / 2048 tokens of context, 2
// rounds, paged attention per step: BF16 cache 54-67 / 100-112 ms, fp8 68-79 / 123-130, int8
// 35-36 / 62-74 (integer dot products, attention_decode_int8_avx2.cpp).
void ModelRunner::warn_if_slow_kv_dtype(DType kv_dtype) const {
    if (kv_dtype != DType::F8E4M3 || kernel_isa() >= Isa::Avx512) return;
    log_warn(
        "--kv-cache-dtype fp8_e4m3 on {} kernels: decode attention on an fp8 cache is slower here "
        "than on a BF16 one; int8 stores as many tokens and is faster",
        isa_name(kernel_isa()));
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
