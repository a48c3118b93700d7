#include "engine/llm_engine.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/logging.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "engine/kv_disk_store.h"
#include "engine/kv_model_id.h"
#include "engine/prompt_check.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"

namespace lmrun {

Result<DType> resolve_weight_dtype(const std::string& dtype, const ModelConfig& model_config) {
    if (dtype == "float32" || dtype == "f32") return DType::F32;
    if (dtype == "bfloat16" || dtype == "bf16") return DType::BF16;
    if (dtype == "auto") return model_config.torch_dtype == DType::F32 ? DType::F32 : DType::BF16;
    return make_error("dtype must be one of auto, float32, bfloat16; got \"{}\"", dtype);
}

namespace {

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
    uint64_t x = seed ^ (salt * 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

// Checked before any weight is loaded.
Status check_kv_offload_config(const EngineConfig& config) {
    if (config.kv_offload_dir.empty()) return ok_status();
    auto refuse = [&config](const char* why) {
        return with_subject(make_error("--kv-offload-dir {}: {}", config.kv_offload_dir, why),
                            config.kv_offload_dir);
    };
    // Each rank would store its own shard under a key with its rank (kv_model_id has it), but
    // the step messages do not yet tell the workers what to load and write.
    if (config.tensor_parallel_size > 1) return refuse("not supported with -tp > 1 yet");
    if (!config.enable_prefix_caching) return refuse("needs prefix caching (drop --no-prefix-caching)");
    return ok_status();
}

}  // namespace

LLMEngine::~LLMEngine() = default;

Result<std::unique_ptr<LLMEngine>> LLMEngine::create(const EngineConfig& config) {
    std::unique_ptr<LLMEngine> engine(new LLMEngine());
    engine->config_ = config;
    LMRUN_RETURN_IF_ERROR(check_kv_offload_config(config));
    LMRUN_ASSIGN_OR_RETURN(ModelConfig model_config, load_model_config(config.model_dir));
    LMRUN_ASSIGN_OR_RETURN(DType dtype, resolve_weight_dtype(config.dtype, model_config));
    LMRUN_ASSIGN_OR_RETURN(WeightQuantization quantization,
                           parse_weight_quantization(config.quantization, config.unquantized_embeddings));
    const std::string tokenizer_dir = config.tokenizer_dir.empty() ? config.model_dir : config.tokenizer_dir;
    if (std::filesystem::exists(tokenizer_dir + "/tokenizer.json")) {
        LMRUN_ASSIGN_OR_RETURN(engine->tokenizer_, Tokenizer::from_dir(tokenizer_dir));
    } else if (!config.tokenizer_dir.empty()) {
        return with_subject(make_error(ErrorKind::NotFound, "{}: no tokenizer.json", tokenizer_dir),
                            tokenizer_dir);
    }
    parallel::ExecutorConfig executor_config;
    executor_config.model_dir = config.model_dir;
    executor_config.dtype = dtype;
    executor_config.quantization = quantization;
    executor_config.packed_cache = config.packed_cache;
    executor_config.runner = config.runner;
    executor_config.tensor_parallel_size = config.tensor_parallel_size;
    executor_config.threads_per_rank = config.num_threads;
    executor_config.worker_executable = config.worker_executable;
    LMRUN_ASSIGN_OR_RETURN(
        executor_config.backend,
        parallel::resolve_executor_backend(config.distributed_executor_backend, config.tensor_parallel_size));
    LMRUN_ASSIGN_OR_RETURN(engine->executor_, parallel::Executor::create(executor_config));

    const ModelRunner& runner = engine->executor_->runner();
    const ModelRunnerConfig& runner_config = runner.config();
    engine->block_manager_ = std::make_unique<BlockManager>(
        runner.num_kv_blocks(), runner_config.block_size, config.enable_prefix_caching,
        config.block_hash_fn ? config.block_hash_fn : &default_block_hash);
    engine->eos_token_ids_ = model_config.eos_token_ids;
    const std::optional<int32_t> tokenizer_eos =
        engine->tokenizer_ ? engine->tokenizer_->eos_token_id() : std::nullopt;
    if (tokenizer_eos &&
        std::count(engine->eos_token_ids_.begin(), engine->eos_token_ids_.end(), *tokenizer_eos) == 0) {
        engine->eos_token_ids_.push_back(*tokenizer_eos);
    }
    SchedulerConfig scheduler_config;
    scheduler_config.max_num_seqs = runner_config.max_num_seqs;
    scheduler_config.max_num_batched_tokens = runner_config.max_num_batched_tokens;
    scheduler_config.max_model_len = runner_config.max_model_len;
    scheduler_config.enable_chunked_prefill = config.enable_chunked_prefill;
    engine->scheduler_ =
        std::make_unique<Scheduler>(scheduler_config, *engine->block_manager_, engine->eos_token_ids_);
    LMRUN_RETURN_IF_ERROR(engine->start_kv_offload());
    engine->runner_seqs_.reserve(size_t(runner_config.max_num_seqs));
    engine->sampled_ids_.reserve(size_t(runner_config.max_num_seqs));
    return engine;
}

Status LLMEngine::start_kv_offload() {
    const EngineConfig& config = config_;
    if (config.kv_offload_dir.empty()) return ok_status();
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<KvDiskStore> store,
                           KvDiskStore::open(config.kv_offload_dir, config.kv_offload_bytes));
    const ModelRunner& runner = executor_->runner();
    const KvCacheShape& shape = runner.kv_cache_shape();
    const uint64_t model_id = kv_model_id(config.model_dir, runner.model().weight_dtype(), shape, 0,
                                          executor_->tensor_parallel_size());
    // A quarter of the cache may be pinned waiting for the writer.
    const int64_t max_pending = std::max<int64_t>(runner.num_kv_blocks() / 4, 1);
    kv_offload_ = std::make_unique<KvOffload>(std::move(store), model_id, runner.kv_cache(), *block_manager_,
                                              config.kv_offload_load_mode, max_pending);
    const int64_t file_bytes = KvDiskStore::kHeaderBytes + kv_offload_->block_payload_bytes();
    if (file_bytes > config.kv_offload_bytes) {
        kv_offload_.reset();
        return with_subject(
            make_error("--kv-offload-size: one KV block takes {} bytes, more than the bound of {}",
                       file_bytes, config.kv_offload_bytes),
            "--kv-offload-size");
    }
    scheduler_->set_prefix_loader(kv_offload_.get());
    log_info("KV tier: {} (at most {:.2f} GiB, {:.1f} KiB per block, model id {:016x})",
             config.kv_offload_dir, double(config.kv_offload_bytes) / double(int64_t(1) << 30),
             double(file_bytes) / 1024, model_id);
    return ok_status();
}

std::optional<KvOffloadStats> LLMEngine::kv_offload_stats() const {
    if (!kv_offload_) return std::nullopt;
    return kv_offload_->stats();
}

Status LLMEngine::validate_request(const std::vector<int32_t>& prompt_ids,
                                   const SamplingParams& params) const {
    LMRUN_RETURN_IF_ERROR(params.validate());
    LMRUN_RETURN_IF_ERROR(check_prompt_ids(prompt_ids, model_config().vocab_size, max_model_len()));
    // Fits the KV cache (and the step budget without chunked prefill).
    return scheduler_->check_prompt(int64_t(prompt_ids.size()));
}

Status LLMEngine::add_request(const std::string& request_id, std::vector<int32_t> prompt_ids,
                              const SamplingParams& params, DeltaCallback on_delta) {
    LMRUN_RETURN_IF_ERROR(health());
    LMRUN_RETURN_IF_ERROR(validate_request(prompt_ids, params));
    if (requests_.count(request_id)) return make_error("request id \"{}\" is already in use", request_id);
    auto request = std::make_unique<Request>();
    request->id = request_id;
    request->params = params;
    LMRUN_RETURN_IF_ERROR(compile_grammar(*request));
    request->on_delta = std::move(on_delta);
    request->metrics.arrival_time = now_seconds();
    request->metrics.num_prompt_tokens = int64_t(prompt_ids.size());
    request->prompt_ids = std::move(prompt_ids);
    const uint64_t base_seed = params.seed ? *params.seed : mix_seed(config_.seed, uint64_t(next_seq_id_));
    request->completions.resize(size_t(params.n));
    for (int32_t index = 0; index < params.n; ++index) {
        Completion& completion = request->completions[size_t(index)];
        completion.request = request.get();
        completion.output.index = index;
        completion.seed = index == 0 ? base_seed : mix_seed(base_seed, uint64_t(index));
    }
    // The first completion runs alone until its prompt is computed; the others then reuse its cached blocks.
    start_completion(request->completions[0]);
    requests_[request_id] = std::move(request);
    return ok_status();
}

void LLMEngine::start_completion(Completion& completion) {
    const Request& request = *completion.request;
    completion.seq = std::make_shared<Sequence>(next_seq_id_++, request.prompt_ids, request.params,
                                                request.metrics.arrival_time);
    completion.processor =
        std::make_unique<OutputProcessor>(tokenizer_.get(), request.params, request.prompt_ids);
    start_grammar(request, *completion.seq);
    completion_of_seq_[completion.seq->seq_id] = &completion;
    scheduler_->add(completion.seq);
}

bool LLMEngine::has_unfinished_requests() const {
    return !requests_.empty();
}

EngineStats LLMEngine::stats() const {
    EngineStats stats = stats_;
    stats.num_preemptions = scheduler_->num_preemptions();
    stats.prefix_cache_hits = block_manager_->prefix_cache_hits();
    stats.prefix_cache_queries = block_manager_->prefix_cache_queries();
    stats.num_prompt_tokens_loaded = scheduler_->num_loaded_tokens();
    return stats;
}

}  // namespace lmrun
