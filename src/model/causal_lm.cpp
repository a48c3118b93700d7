#include "model/causal_lm.h"

#include <filesystem>

#include "core/logging.h"
#include "core/memory_info.h"
#include "core/op_profiler.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "kernels/attention.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "model/config_limits.h"
#include "model/tensor_parallel_shapes.h"
#include "parallel/process_group.h"

namespace lmrun {
namespace {

// Before anything is allocated: the checkpoint must hold what config.json describes, so a
// config that lies about its sizes fails here, not after allocating memory for them.
Status check_checkpoint_matches(const ModelConfig& config, const Checkpoint& checkpoint,
                                const std::string& config_path) {
    LMRUN_ASSIGN_OR_RETURN(const TensorInfo* embed, checkpoint.get("model.embed_tokens.weight"));
    if (embed->shape.size() != 2 || embed->shape[0] > config.vocab_size ||
        embed->shape[1] != config.hidden_size)
        return with_subject(make_error(ErrorKind::Corrupt,
                                       "{}: vocab_size {} and hidden_size {} do not match tensor "
                                       "'model.embed_tokens.weight' of shape {} in {}",
                                       config_path, config.vocab_size, config.hidden_size,
                                       embed->shape_string(), embed->file_path),
                            config_path);
    const std::string last_layer =
        "model.layers." + std::to_string(config.num_hidden_layers - 1) + ".input_layernorm.weight";
    if (checkpoint.find(last_layer) == nullptr)
        return with_subject(
            make_error(ErrorKind::Corrupt,
                       "{}: num_hidden_layers is {} but the checkpoint in {} has no tensor '{}'", config_path,
                       config.num_hidden_layers, checkpoint.dir(), last_layer),
            config_path);
    return ok_status();
}

}  // namespace

CausalLM::CausalLM(const ModelConfig& config, DType weight_dtype, const ParallelConfig& parallel)
    : config_(config),
      weight_dtype_(weight_dtype),
      parallel_(parallel),
      embed_tokens_(config.vocab_size, config.hidden_size, weight_dtype, parallel),
      norm_(config.hidden_size, config.rms_norm_eps),
      lm_head_(config.vocab_size, config.hidden_size, weight_dtype, parallel) {
    layers_.reserve(config.num_hidden_layers);
    for (int64_t i = 0; i < config.num_hidden_layers; ++i)
        layers_.emplace_back(config, weight_dtype, parallel);
    rope_cos_sin_.resize(size_t(config.max_position_embeddings * config.head_dim));
    kernels::build_rope_cache(config.rope_theta, config.head_dim, config.max_position_embeddings,
                              rope_cos_sin_.data());
}

Result<std::unique_ptr<CausalLM>> CausalLM::load(const std::string& model_dir, const ModelConfig& config,
                                                 DType weight_dtype, const ParallelConfig& parallel) {
    if (weight_dtype != DType::F32 && weight_dtype != DType::BF16) {
        return make_error(ErrorKind::Unsupported, "{}: weights can be held as F32 or BF16, not {}", model_dir,
                          dtype_name(weight_dtype));
    }
    LMRUN_RETURN_IF_ERROR(check_tensor_parallel_shapes(config, parallel.tp_size));
    if (parallel.tp_size > 1 && parallel.group == nullptr)
        return make_error(ErrorKind::Internal, "a tensor-parallel model needs its process group");
    const std::string config_path = (std::filesystem::path(model_dir) / "config.json").string();
    // The whole model against this machine's memory, on every rank. Right for -tp 1 and roughly
    // right for the mp backend (all ranks' shards add up to about the whole model on one machine),
    // too strict for mpi ranks on separate machines (each needs ~1/N). TODO(issue 11): count
    // this rank's shard (1/N of q/o/MLP/vocab rows, replicated KV heads and norms) times the
    // ranks sharing the machine (MPI_COMM_TYPE_SHARED), and measure the available memory
    // before any rank loads (ranks loading at once see each other's shards as used).
    LMRUN_RETURN_IF_ERROR(
        check_model_fits_memory(config, weight_dtype, available_memory_bytes(), config_path));
    // Where start-up time goes (debug level): the weights are packed by every thread, so CPU
    // seconds above the wall time are the other threads' share; the kernel zeroing the packed
    // buffer's fresh pages counts as this process's (system) CPU.
    const double start_s = now_seconds(), start_cpu_s = process_cpu_seconds();
    LMRUN_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(model_dir));
    LMRUN_RETURN_IF_ERROR(check_checkpoint_matches(config, checkpoint, config_path));
    const double opened_s = now_seconds();
    std::unique_ptr<CausalLM> model(new CausalLM(config, weight_dtype, parallel));
    const double built_s = now_seconds();
    LMRUN_RETURN_IF_ERROR(model->load_weights(checkpoint));
    log_debug(
        "load: checkpoint opened in {:.0f} ms, model built (rope cache) in {:.0f} ms, {:.1f} MiB packed in "
        "{:.0f} ms; {:.0f} ms of CPU in all",
        1e3 * (opened_s - start_s), 1e3 * (built_s - opened_s), double(model->weight_nbytes()) / (1 << 20),
        1e3 * (now_seconds() - built_s), 1e3 * (process_cpu_seconds() - start_cpu_s));
    return model;
}

// Checkpoint tensor names → fused, sharded parameters. Qwen2 adds q/k/v biases,
// Qwen3 adds q_norm/k_norm; everything else is shared with Llama.
Status CausalLM::load_layer(const Checkpoint& checkpoint, int64_t index, DecoderLayer& layer) {
    const std::string prefix = "model.layers." + std::to_string(index) + ".";
    auto get = [&](const std::string& name) { return checkpoint.get(prefix + name); };
    const TensorInfo* src = nullptr;
    Attention& attn = layer.self_attn;

    const std::pair<const char*, QkvShard> qkv_parts[] = {{"self_attn.q_proj", QkvShard::Q},
                                                          {"self_attn.k_proj", QkvShard::K},
                                                          {"self_attn.v_proj", QkvShard::V}};
    for (const auto& [name, shard] : qkv_parts) {
        LMRUN_ASSIGN_OR_RETURN(src, get(std::string(name) + ".weight"));
        LMRUN_RETURN_IF_ERROR(attn.qkv_proj.load_weight(*src, shard));
        if (config_.attention_bias) {
            LMRUN_ASSIGN_OR_RETURN(src, get(std::string(name) + ".bias"));
            LMRUN_RETURN_IF_ERROR(attn.qkv_proj.load_bias(*src, shard));
        }
    }
    LMRUN_ASSIGN_OR_RETURN(src, get("self_attn.o_proj.weight"));
    LMRUN_RETURN_IF_ERROR(attn.o_proj.load_weight(*src));
    if (attn.q_norm && attn.k_norm) {  // both or neither (Attention's constructor)
        LMRUN_ASSIGN_OR_RETURN(src, get("self_attn.q_norm.weight"));
        LMRUN_RETURN_IF_ERROR(attn.q_norm->load_weight(*src));
        LMRUN_ASSIGN_OR_RETURN(src, get("self_attn.k_norm.weight"));
        LMRUN_RETURN_IF_ERROR(attn.k_norm->load_weight(*src));
    }
    LMRUN_ASSIGN_OR_RETURN(src, get("mlp.gate_proj.weight"));
    LMRUN_RETURN_IF_ERROR(layer.mlp.gate_up_proj.load_weight(*src, 0));
    LMRUN_ASSIGN_OR_RETURN(src, get("mlp.up_proj.weight"));
    LMRUN_RETURN_IF_ERROR(layer.mlp.gate_up_proj.load_weight(*src, 1));
    LMRUN_ASSIGN_OR_RETURN(src, get("mlp.down_proj.weight"));
    LMRUN_RETURN_IF_ERROR(layer.mlp.down_proj.load_weight(*src));
    LMRUN_ASSIGN_OR_RETURN(src, get("input_layernorm.weight"));
    LMRUN_RETURN_IF_ERROR(layer.input_layernorm.load_weight(*src));
    LMRUN_ASSIGN_OR_RETURN(src, get("post_attention_layernorm.weight"));
    LMRUN_RETURN_IF_ERROR(layer.post_attention_layernorm.load_weight(*src));
    layer.finalize();
    return ok_status();
}

// Every linear weight is packed straight from the mapped checkpoint, and each part's file pages
// are released once packed, so peak memory while loading is the packed weights plus about one
// checkpoint tensor. A tied head is packed from the embedding's tensor, and the embedding looks
// its rows up there (the table is held once).
Status CausalLM::load_weights(const Checkpoint& checkpoint) {
    const TensorInfo* src = nullptr;
    LMRUN_ASSIGN_OR_RETURN(src, checkpoint.get("model.embed_tokens.weight"));
    // Tied models use the embedding table even when the file also stores lm_head.weight.
    if (config_.tie_word_embeddings) {
        LMRUN_RETURN_IF_ERROR(lm_head_.load_weight(*src));
        lm_head_.finalize();
        // Rounding to the storage dtype is the same either way, so the lookup reads the head.
        embed_tokens_.share_with(lm_head_.packed());
        checkpoint.release_tensors("model.embed_tokens.");
    } else {
        LMRUN_RETURN_IF_ERROR(embed_tokens_.load_weight(*src));
        checkpoint.release_tensors("model.embed_tokens.");
        LMRUN_ASSIGN_OR_RETURN(src, checkpoint.get("lm_head.weight"));
        LMRUN_RETURN_IF_ERROR(lm_head_.load_weight(*src));
        lm_head_.finalize();
        checkpoint.release_tensors("lm_head.");
    }
    for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
        LMRUN_RETURN_IF_ERROR(load_layer(checkpoint, i, layers_[i]));
        // Packed now: the file's pages of this layer need not stay in our resident set.
        checkpoint.release_tensors("model.layers." + std::to_string(i) + ".");
    }
    LMRUN_ASSIGN_OR_RETURN(src, checkpoint.get("model.norm.weight"));
    LMRUN_RETURN_IF_ERROR(norm_.load_weight(*src));
    checkpoint.release_tensors("");  // the rest (final norm) is held in our own memory too
    return ok_status();
}

void CausalLM::forward(const ForwardContext& context, std::span<const kernels::KvCacheLayer> kv_layers,
                       ActivationBuffers& buffers) const {
    LMRUN_CHECK(context.num_padded_tokens <= buffers.max_num_tokens,
                "step larger than the activation buffers");
    LMRUN_CHECK(kv_layers.size() == layers_.size(), "one KV cache layer per decoder layer");
    {
        ScopedOp scope(Op::Embedding);
        embed_tokens_.forward(context.input_ids, context.num_padded_tokens, buffers.hidden.data<float>());
    }
    for (size_t i = 0; i < layers_.size(); ++i) {
        layers_[i].forward(context, i == 0, kv_layers[i], rope_cos_sin_.data(), buffers);
    }
}

void CausalLM::compute_logits(std::span<const int32_t> rows, ActivationBuffers& buffers,
                              LinearPath path) const {
    ScopedOp scope(Op::LmHead);
    const int64_t num_rows = int64_t(rows.size());
    LMRUN_CHECK(num_rows <= buffers.max_num_logit_rows, "more logit rows than buffered");
    const int64_t hidden_size = config_.hidden_size;
    const float* hidden = buffers.hidden.data<float>();
    const float* residual = buffers.residual.data<float>();
    float* selected_hidden = buffers.selected_hidden.data<float>();
    float* selected_residual = buffers.selected_residual.data<float>();
    for (int64_t i = 0; i < num_rows; ++i) {
        std::copy_n(hidden + rows[i] * hidden_size, hidden_size, selected_hidden + i * hidden_size);
        std::copy_n(residual + rows[i] * hidden_size, hidden_size, selected_residual + i * hidden_size);
    }
    norm_.forward_add(selected_hidden, selected_residual, num_rows);
    if (parallel_.tp_size == 1)
        return lm_head_.forward(selected_hidden, num_rows, buffers.logits.data<float>(), path);
    // Vocab-parallel: each rank computes its columns; rank 0, which samples, gathers them all.
    float* local = buffers.local_logits.data<float>();
    lm_head_.forward(selected_hidden, num_rows, local, path);
    float* logits = parallel_.tp_rank == 0 ? buffers.logits.data<float>() : nullptr;
    parallel_.group->gather_columns(local, num_rows, lm_head_.rows_per_rank(), logits, config_.vocab_size);
}

void CausalLM::reserve_workspace(int64_t max_decode_rows, int64_t max_num_seqs) const {
    for (const DecoderLayer& layer : layers_) {
        kernels::reserve_linear_workspace(layer.self_attn.qkv_proj.packed(), max_decode_rows);
        kernels::reserve_linear_workspace(layer.self_attn.o_proj.packed(), max_decode_rows);
        kernels::reserve_linear_workspace(layer.mlp.gate_up_proj.packed(), max_decode_rows);
        kernels::reserve_linear_workspace(layer.mlp.down_proj.packed(), max_decode_rows);
    }
    kernels::reserve_linear_workspace(lm_head_.packed(), max_decode_rows);
    kernels::reserve_attention_workspace(config_.head_dim, num_heads_local(), num_kv_heads_local(),
                                         max_num_seqs);
}

size_t CausalLM::weight_nbytes() const {
    const Tensor& table = embed_tokens_.table();  // empty when tied: the head holds it
    size_t total = (table.empty() ? 0 : table.nbytes()) + lm_head_.weight_nbytes();
    for (const DecoderLayer& layer : layers_) {
        total += layer.self_attn.qkv_proj.weight_nbytes() + layer.self_attn.o_proj.weight_nbytes() +
                 layer.mlp.gate_up_proj.weight_nbytes() + layer.mlp.down_proj.weight_nbytes();
    }
    return total;
}

}  // namespace lmrun
