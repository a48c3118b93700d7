// A decoder-only causal LM of the Llama family (Llama, Qwen2, Qwen3): token
// embedding, N decoder layers, final RMSNorm, LM head. The families differ only
// in flags of ModelConfig (attention_bias for Qwen2, qk_norm for Qwen3), so one
// composition serves all three; loading maps HF checkpoint names onto the fused,
// sharded parameters (nano-vLLM's packed_modules_mapping).
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "model/activation_buffers.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/decoder_layer.h"
#include "model/forward_context.h"
#include "model/packed_cache_directory.h"
#include "model/vocab_embedding.h"

namespace lmrun {

class CausalLM {
  public:
    // Builds the model and fills every parameter from the checkpoint in `model_dir`.
    // weight_dtype: F32 or BF16 (what unquantized weights are stored as in memory). Layers the
    // checkpoint stores in int8 (config.quantization) stay int8; `quantization` may quantize the
    // others at load (quantization_config.h). packed_cache.dir (when not empty): the packed linear
    // weights are mapped from a file there when one matches, else packed, and the file is written
    // in the background (packed_cache_directory.h) by a thread that pauses while forward passes
    // run, so the first requests do not wait for it; a file that does not match is reported in
    // one log line and rebuilt.
    static Result<std::unique_ptr<CausalLM>> load(const std::string& model_dir, const ModelConfig& config,
                                                  DType weight_dtype, const ParallelConfig& parallel = {},
                                                  const WeightQuantization& quantization = {},
                                                  const PackedCacheOptions& packed_cache = {});
    // Waits for the packed cache file's write, if one is under way.
    ~CausalLM();
    CausalLM(const CausalLM&) = delete;
    CausalLM& operator=(const CausalLM&) = delete;

    // Returns once the packed cache file load() started writing is written (or given up, said in
    // a log line); at once when there is none.
    void finish_packed_cache_write();

    // Runs all layers over the step's tokens: buffers.hidden/residual hold the
    // un-normalized last hidden state afterwards. kv_layers: one per layer.
    void forward(const ForwardContext& context, std::span<const kernels::KvCacheLayer> kv_layers,
                 ActivationBuffers& buffers) const;
    // Final norm + LM head for the chosen token rows only: buffers.logits[i] = logits of token rows[i]
    // (on rank 0: every rank computes its vocab columns, and rank 0 gathers them).
    void compute_logits(std::span<const int32_t> rows, ActivationBuffers& buffers,
                        LinearPath path = LinearPath::Fastest) const;

    // Grows the kernels' scratch on the calling thread (and its thread team) so that steps of up
    // to max_num_seqs sequences, with up to max_decode_rows rows on the allocation-free path,
    // allocate nothing there: sized from the shapes, without running a forward.
    void reserve_workspace(int64_t max_decode_rows, int64_t max_num_seqs) const;

    const ModelConfig& config() const { return config_; }
    DType weight_dtype() const { return weight_dtype_; }
    // Whether any layer holds int8 weights.
    bool has_int8_weights() const;
    int64_t num_heads_local() const { return layers_[0].self_attn.qkv_proj.num_heads(); }
    int64_t num_kv_heads_local() const { return layers_[0].self_attn.qkv_proj.num_kv_heads(); }
    int64_t intermediate_local() const { return layers_[0].mlp.down_proj.in_features(); }
    const ParallelConfig& parallel() const { return parallel_; }
    // Logit columns this rank computes (the whole vocabulary without tensor parallelism).
    int64_t vocab_local() const { return lm_head_.rows_per_rank(); }
    size_t weight_nbytes() const;
    // The weight bytes one forward pass reads in full: the layers and the LM head (an untied
    // embedding table is only read at the tokens' rows). Rooflines divide this by bandwidth.
    size_t forward_weight_nbytes() const;

  private:
    CausalLM(const ModelConfig& config, DType weight_dtype, const ParallelConfig& parallel);
    // Sets every linear layer's LinearQuant before loading.
    Status choose_quantization(const WeightQuantization& quantization);
    Result<LinearQuant> linear_quant(std::initializer_list<std::string> layer_names) const;
    Status load_weights(const Checkpoint& checkpoint);
    // Every packed linear weight in the cache file's order: the LM head, then per layer qkv, o,
    // gate_up and down. fn(layer) gets a ParallelLMHead or a LinearBase.
    template <typename Fn>
    void for_each_packed(Fn&& fn);
    // Takes the weights from the packed cache when it holds them (true), else leaves them to load.
    bool use_packed_cache(const PackedCacheKey& key);
    // Starts the background write of the packed weights to key.path.
    void start_packed_cache_write(const PackedCacheOptions& options, PackedCacheKey key);
    Status load_layer(const Checkpoint& checkpoint, int64_t index, DecoderLayer& layer);

    ModelConfig config_;
    DType weight_dtype_;
    WeightQuantization quantization_;
    ParallelConfig parallel_;
    VocabParallelEmbedding embed_tokens_;
    std::vector<DecoderLayer> layers_;
    RMSNorm norm_;
    ParallelLMHead lm_head_;
    std::vector<float> rope_cos_sin_;  // [max_position, head_dim]
    std::thread packed_cache_writer_;  // reads the packed weights above: joined before they go
    std::atomic<bool> packed_cache_write_done_{true};
    std::atomic<bool> packed_cache_write_urgent_{false};  // the process waits for the file: no pauses
    // Forward passes and logit computations under way (the packed cache writer pauses for them).
    mutable std::atomic<int> computing_{0};
    struct ComputingMark {
        explicit ComputingMark(std::atomic<int>& count) : count_(count) { count_.fetch_add(1); }
        ~ComputingMark() { count_.fetch_sub(1); }
        ComputingMark(const ComputingMark&) = delete;
        ComputingMark& operator=(const ComputingMark&) = delete;
        std::atomic<int>& count_;
    };
};

}  // namespace lmrun
