#include "model/causal_lm.h"

#include <chrono>
#include <filesystem>
#include <optional>

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
#include "model/weight_scale.h"
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

// Fused layers (q/k/v, gate/up) hold one matrix, so their parts must agree.
Result<LinearQuant> linear_quant_of(const ModelConfig& config, const WeightQuantization& quantization,
                                    std::initializer_list<std::string> layer_names) {
    size_t stored = 0;
    for (const std::string& name : layer_names)
        stored += config.quantization && config.quantization->quantizes(name);
    if (stored != 0 && stored != layer_names.size())
        return make_error(ErrorKind::Unsupported,
                          "quantization_config quantizes only some of the fused layers {} (lmrun packs them "
                          "into one matrix)",
                          fmt::join(layer_names, ", "));
    if (stored != 0) return LinearQuant::Int8Checkpoint;
    return quantization.int8_at_load ? LinearQuant::Int8AtLoad : LinearQuant::None;
}

// A tied head is the (float) embedding table: only quantization at load can make it int8.
bool head_stored_int8(const ModelConfig& config) {
    return !config.tie_word_embeddings && config.quantization && config.quantization->quantizes("lm_head");
}

// How this rank will hold the model (the same decisions as choose_quantization), for the
// memory check that runs before anything is allocated.
Result<ModelMemoryLayout> memory_layout(const ModelConfig& config, DType weight_dtype,
                                        const WeightQuantization& quantization,
                                        const ParallelConfig& parallel) {
    ModelMemoryLayout layout;
    layout.weight_dtype = weight_dtype;
    layout.tp_size = parallel.tp_size;
    layout.ranks_sharing_memory = parallel.ranks_sharing_memory;
    auto count = [&](int64_t& int8_layers, std::initializer_list<std::string> names) -> Status {
        LMRUN_ASSIGN_OR_RETURN(LinearQuant quant, linear_quant_of(config, quantization, names));
        int8_layers += quant != LinearQuant::None;
        return ok_status();
    };
    for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
        const std::string prefix = "model.layers." + std::to_string(i) + ".";
        LMRUN_RETURN_IF_ERROR(
            count(layout.int8_qkv_layers,
                  {prefix + "self_attn.q_proj", prefix + "self_attn.k_proj", prefix + "self_attn.v_proj"}));
        LMRUN_RETURN_IF_ERROR(count(layout.int8_o_layers, {prefix + "self_attn.o_proj"}));
        LMRUN_RETURN_IF_ERROR(
            count(layout.int8_gate_up_layers, {prefix + "mlp.gate_proj", prefix + "mlp.up_proj"}));
        LMRUN_RETURN_IF_ERROR(count(layout.int8_down_layers, {prefix + "mlp.down_proj"}));
    }
    const bool embeddings_at_load = quantization.int8_at_load && quantization.quantize_embeddings;
    layout.int8_lm_head = head_stored_int8(config) || embeddings_at_load;
    layout.int8_embedding = config.tie_word_embeddings ? layout.int8_lm_head : embeddings_at_load;
    return layout;
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
                                                 DType weight_dtype, const ParallelConfig& parallel,
                                                 const WeightQuantization& quantization,
                                                 const PackedCacheOptions& packed_cache) {
    if (weight_dtype != DType::F32 && weight_dtype != DType::BF16) {
        return make_error(ErrorKind::Unsupported, "{}: weights can be held as F32 or BF16, not {}", model_dir,
                          dtype_name(weight_dtype));
    }
    LMRUN_RETURN_IF_ERROR(check_tensor_parallel_shapes(config, parallel.tp_size));
    if (parallel.tp_size > 1 && parallel.group == nullptr)
        return make_error(ErrorKind::Internal, "a tensor-parallel model needs its process group");
    const std::string config_path = (std::filesystem::path(model_dir) / "config.json").string();
    // What this rank will hold (its shard, int8 layers at a byte per weight) times the ranks
    // whose shards share this machine. Ranks loading at once may see each other's shards as
    // used already; the sum is what must fit, so the check errs towards strict there.
    LMRUN_ASSIGN_OR_RETURN(ModelMemoryLayout layout,
                           memory_layout(config, weight_dtype, quantization, parallel));
    LMRUN_RETURN_IF_ERROR(check_model_fits_memory(config, layout, available_memory_bytes(), config_path));
    // Where start-up time goes (debug level): the weights are packed by every thread, so CPU
    // seconds above the wall time are the other threads' share; the kernel zeroing the packed
    // buffer's fresh pages counts as this process's (system) CPU.
    const double start_s = now_seconds(), start_cpu_s = process_cpu_seconds();
    LMRUN_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(model_dir));
    LMRUN_RETURN_IF_ERROR(check_checkpoint_matches(config, checkpoint, config_path));
    const double opened_s = now_seconds();
    std::unique_ptr<CausalLM> model(new CausalLM(config, weight_dtype, parallel));
    const double built_s = now_seconds();
    LMRUN_RETURN_IF_ERROR(model->choose_quantization(quantization));
    std::optional<PackedCacheKey> cache_key;
    bool cached = false;
    if (!packed_cache.dir.empty()) {
        LMRUN_ASSIGN_OR_RETURN(cache_key, packed_cache_key(packed_cache.dir, checkpoint, weight_dtype,
                                                           quantization, parallel.tp_rank, parallel.tp_size));
        cached = model->use_packed_cache(*cache_key);
    }
    LMRUN_RETURN_IF_ERROR(model->load_weights(checkpoint));
    log_debug(
        "load: checkpoint opened in {:.0f} ms, model built (rope cache) in {:.0f} ms, {:.1f} MiB {} in "
        "{:.0f} ms; {:.0f} ms of CPU in all",
        1e3 * (opened_s - start_s), 1e3 * (built_s - opened_s), double(model->weight_nbytes()) / (1 << 20),
        cached ? "mapped from the packed cache" : "packed", 1e3 * (now_seconds() - built_s),
        1e3 * (process_cpu_seconds() - start_cpu_s));
    if (cache_key && !cached) model->start_packed_cache_write(packed_cache, std::move(*cache_key));
    return model;
}

template <typename Fn>
void CausalLM::for_each_packed(Fn&& fn) {
    fn(lm_head_);
    for (DecoderLayer& layer : layers_) {
        fn(layer.self_attn.qkv_proj);
        fn(layer.self_attn.o_proj);
        fn(layer.mlp.gate_up_proj);
        fn(layer.mlp.down_proj);
    }
}

bool CausalLM::use_packed_cache(const PackedCacheKey& key) {
    std::vector<PackedWeightShape> shapes;
    for_each_packed([&](auto& layer) { shapes.push_back(layer.packed_shape()); });
    Result<std::vector<kernels::LinearWeight>> weights = read_packed_cache(key, shapes);
    if (!weights.ok()) {
        if (weights.error().kind != ErrorKind::NotFound) {
            log_warn("packed cache not used, packing from the checkpoint and rewriting it: {}",
                     weights.error().message);
            // Gone before the write, which would otherwise take a damaged file whose header
            // still matches for one another process wrote meanwhile.
            std::error_code error;
            std::filesystem::remove(key.path, error);
        }
        return false;
    }
    size_t next = 0;
    for_each_packed([&](auto& layer) { layer.use_packed(std::move(weights.value()[next++])); });
    return true;
}

void CausalLM::start_packed_cache_write(const PackedCacheOptions& options, PackedCacheKey key) {
    std::vector<const kernels::LinearWeight*> weights;
    for_each_packed([&](auto& layer) { weights.push_back(&layer.packed()); });
    packed_cache_write_done_ = false;
    packed_cache_writer_ = std::thread([this, options, key = std::move(key), weights = std::move(weights)] {
        // Paced by the engine: before every few MiB the writer waits while a forward pass
        // runs, so the first requests of a first start are as fast as without the cache (a
        // piece begun just before a pass delays it by a millisecond at most). A lower thread
        // priority would do the same without the waits, but only root may raise it again for
        // the wait at exit. Once the process waits for the file, it is written at once.
        auto wait_while_computing = [this] {
            while (computing_.load() > 0 && !packed_cache_write_urgent_.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        };
        const Stopwatch clock;
        Result<bool> stored = store_packed_cache(options, key, weights, wait_while_computing);
        if (!stored.ok()) {
            log_warn("packed cache not written: {}", stored.error().message);
        } else if (stored.value()) {
            log_info("packed weights written to {} in {:.2f} s (later starts map them)", key.path,
                     clock.elapsed_seconds());
        }
        packed_cache_write_done_ = true;
    });
}

void CausalLM::finish_packed_cache_write() {
    if (!packed_cache_writer_.joinable()) return;
    if (!packed_cache_write_done_) log_info("finishing the packed weight file for later starts");
    packed_cache_write_urgent_ = true;
    packed_cache_writer_.join();
}

CausalLM::~CausalLM() {
    finish_packed_cache_write();
}

Result<LinearQuant> CausalLM::linear_quant(std::initializer_list<std::string> layer_names) const {
    return linear_quant_of(config_, quantization_, layer_names);
}

Status CausalLM::choose_quantization(const WeightQuantization& quantization) {
    quantization_ = quantization;
    for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
        const std::string prefix = "model.layers." + std::to_string(i) + ".";
        DecoderLayer& layer = layers_[i];
        LinearQuant quant;
        LMRUN_ASSIGN_OR_RETURN(quant, linear_quant({prefix + "self_attn.q_proj", prefix + "self_attn.k_proj",
                                                    prefix + "self_attn.v_proj"}));
        layer.self_attn.qkv_proj.set_quantization(quant);
        LMRUN_ASSIGN_OR_RETURN(quant, linear_quant({prefix + "self_attn.o_proj"}));
        layer.self_attn.o_proj.set_quantization(quant);
        LMRUN_ASSIGN_OR_RETURN(quant, linear_quant({prefix + "mlp.gate_proj", prefix + "mlp.up_proj"}));
        layer.mlp.gate_up_proj.set_quantization(quant);
        LMRUN_ASSIGN_OR_RETURN(quant, linear_quant({prefix + "mlp.down_proj"}));
        layer.mlp.down_proj.set_quantization(quant);
    }
    if (head_stored_int8(config_)) {
        lm_head_.set_quantization(LinearQuant::Int8Checkpoint);
    } else if (quantization.int8_at_load && quantization.quantize_embeddings) {
        lm_head_.set_quantization(LinearQuant::Int8AtLoad);
    }
    // A tied embedding looks its rows up in the head; an untied one is packed to int8 itself.
    if (!config_.tie_word_embeddings && quantization.int8_at_load && quantization.quantize_embeddings)
        embed_tokens_.hold_int8();
    return ok_status();
}

bool CausalLM::has_int8_weights() const {
    if (lm_head_.packed().storage_dtype() == DType::I8) return true;
    for (const DecoderLayer& layer : layers_) {
        for (const LinearBase* linear : {static_cast<const LinearBase*>(&layer.self_attn.qkv_proj),
                                         static_cast<const LinearBase*>(&layer.self_attn.o_proj),
                                         static_cast<const LinearBase*>(&layer.mlp.gate_up_proj),
                                         static_cast<const LinearBase*>(&layer.mlp.down_proj)}) {
            if (linear->packed().storage_dtype() == DType::I8) return true;
        }
    }
    return false;
}

// Checkpoint tensor names → fused, sharded parameters. Qwen2 adds q/k/v biases,
// Qwen3 adds q_norm/k_norm; everything else is shared with Llama.
Status CausalLM::load_layer(const Checkpoint& checkpoint, int64_t index, DecoderLayer& layer) {
    const std::string prefix = "model.layers." + std::to_string(index) + ".";
    auto get = [&](const std::string& name) { return checkpoint.get(prefix + name); };
    const TensorInfo* src = nullptr;
    Attention& attn = layer.self_attn;
    // `<name>.weight` through load_weight, and `<name>.weight_scale` through load_scale when the
    // checkpoint stores the layer in int8.
    auto load_projection = [&](const std::string& name, const LinearBase& linear, auto&& load_weight,
                               auto&& load_scale) -> Status {
        if (!linear.packed().empty()) return ok_status();  // from the packed cache
        LMRUN_ASSIGN_OR_RETURN(const TensorInfo* weight, get(name + ".weight"));
        LMRUN_RETURN_IF_ERROR(load_weight(*weight));
        if (linear.quantization() != LinearQuant::Int8Checkpoint) return ok_status();
        LMRUN_ASSIGN_OR_RETURN(WeightScale scale, read_weight_scale(checkpoint, prefix + name, *weight));
        return load_scale(scale.info);
    };

    const std::pair<const char*, QkvShard> qkv_parts[] = {{"self_attn.q_proj", QkvShard::Q},
                                                          {"self_attn.k_proj", QkvShard::K},
                                                          {"self_attn.v_proj", QkvShard::V}};
    for (const auto& [name, part] : qkv_parts) {
        const QkvShard shard = part;  // a copy: clang cannot capture a structured binding under OpenMP
        LMRUN_RETURN_IF_ERROR(load_projection(
            name, attn.qkv_proj, [&](const TensorInfo& t) { return attn.qkv_proj.load_weight(t, shard); },
            [&](const TensorInfo& t) { return attn.qkv_proj.load_weight_scale(t, shard); }));
        if (config_.attention_bias) {
            LMRUN_ASSIGN_OR_RETURN(src, get(std::string(name) + ".bias"));
            LMRUN_RETURN_IF_ERROR(attn.qkv_proj.load_bias(*src, shard));
        }
    }
    LMRUN_RETURN_IF_ERROR(load_projection(
        "self_attn.o_proj", attn.o_proj, [&](const TensorInfo& t) { return attn.o_proj.load_weight(t); },
        [&](const TensorInfo& t) { return attn.o_proj.load_weight_scale(t); }));
    if (attn.q_norm && attn.k_norm) {  // both or neither (Attention's constructor)
        LMRUN_ASSIGN_OR_RETURN(src, get("self_attn.q_norm.weight"));
        LMRUN_RETURN_IF_ERROR(attn.q_norm->load_weight(*src));
        LMRUN_ASSIGN_OR_RETURN(src, get("self_attn.k_norm.weight"));
        LMRUN_RETURN_IF_ERROR(attn.k_norm->load_weight(*src));
    }
    MLP& mlp = layer.mlp;
    for (int part = 0; part < 2; ++part) {
        LMRUN_RETURN_IF_ERROR(load_projection(
            part == 0 ? "mlp.gate_proj" : "mlp.up_proj", mlp.gate_up_proj,
            [&](const TensorInfo& t) { return mlp.gate_up_proj.load_weight(t, part); },
            [&](const TensorInfo& t) { return mlp.gate_up_proj.load_weight_scale(t, part); }));
    }
    LMRUN_RETURN_IF_ERROR(load_projection(
        "mlp.down_proj", mlp.down_proj, [&](const TensorInfo& t) { return mlp.down_proj.load_weight(t); },
        [&](const TensorInfo& t) { return mlp.down_proj.load_weight_scale(t); }));
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
    // A head from the packed cache is not loaded again.
    const bool head_packed = !lm_head_.packed().empty();
    if (config_.tie_word_embeddings) {
        if (!head_packed) LMRUN_RETURN_IF_ERROR(lm_head_.load_weight(*src));
        lm_head_.finalize();
        // Rounding to the storage dtype (or int8 rows) is the same either way, so the lookup
        // reads the head.
        embed_tokens_.share_with(lm_head_.packed());
        checkpoint.release_tensors("model.embed_tokens.");
    } else {
        LMRUN_RETURN_IF_ERROR(embed_tokens_.load_weight(*src));
        checkpoint.release_tensors("model.embed_tokens.");
        LMRUN_ASSIGN_OR_RETURN(src, checkpoint.get("lm_head.weight"));
        if (!head_packed) LMRUN_RETURN_IF_ERROR(lm_head_.load_weight(*src));
        if (!head_packed && config_.quantization && config_.quantization->quantizes("lm_head")) {
            LMRUN_ASSIGN_OR_RETURN(WeightScale scale, read_weight_scale(checkpoint, "lm_head", *src));
            LMRUN_RETURN_IF_ERROR(lm_head_.load_weight_scale(scale.info));
        }
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
    const ComputingMark computing(computing_);
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
    const ComputingMark computing(computing_);
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
    return (embed_tokens_.shares_head() ? 0 : embed_tokens_.weight_nbytes()) + forward_weight_nbytes();
}

size_t CausalLM::forward_weight_nbytes() const {
    size_t total = lm_head_.weight_nbytes();
    for (const DecoderLayer& layer : layers_) {
        total += layer.self_attn.qkv_proj.weight_nbytes() + layer.self_attn.o_proj.weight_nbytes() +
                 layer.mlp.gate_up_proj.weight_nbytes() + layer.mlp.down_proj.weight_nbytes();
    }
    return total;
}

}  // namespace lmrun
