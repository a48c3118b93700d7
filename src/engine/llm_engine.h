// LLMEngine: the step loop of nano-vLLM's LLMEngine. add_request() queues a
// request (prompt ids + SamplingParams, optionally a streaming callback) as a
// Request of n Completions (engine_request.h); step() runs one scheduler step
// through the Executor (the ModelRunner of every tensor-parallel rank), appends the sampled tokens,
// detokenizes them, applies stop strings, reports deltas and returns the requests that finished. Not
// thread-safe: one thread drives it (the server runs it on its engine thread).
//
// If a rank fails (a worker process died), the engine turns fatal: every unfinished request
// finishes with FinishReason::Error, health() reports why and new requests are refused.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "engine/block_manager.h"
#include "engine/engine_request.h"
#include "engine/kv_offload.h"
#include "engine/model_runner.h"
#include "engine/request_output.h"
#include "engine/scheduler.h"
#include "parallel/executor.h"
#include "tokenizer/tokenizer.h"

namespace lmrun {

namespace structured {
class CompiledGrammar;
class GrammarCompiler;
}  // namespace structured

struct EngineConfig {
    std::string model_dir;
    std::string tokenizer_dir;   // empty: the model folder (no tokenizer there = token ids only)
    std::string dtype = "auto";  // auto (checkpoint's), float32, bfloat16
    // "" or "none": as the checkpoint is (int8 if it is a compressed-tensors int8 checkpoint);
    // "int8": quantize float weights to int8 at load (quantization_config.h).
    std::string quantization;
    bool unquantized_embeddings = false;  // with int8: keep the embedding and LM head unquantized
    // dir "": none. Else the packed weights are mapped from a file in this directory when it
    // matches the checkpoint and settings, and written there when not (packed_cache_directory.h).
    PackedCacheOptions packed_cache;
    ModelRunnerConfig runner;  // max_num_seqs, max_num_batched_tokens, max_model_len, block size, KV budget
    bool enable_prefix_caching = true;
    bool enable_chunked_prefill = true;
    int num_threads = 0;           // per rank; 0 = the rank's cores (all cores / tensor_parallel_size)
    int tensor_parallel_size = 1;  // ranks the model is split over
    std::string distributed_executor_backend;          // uni, mp, mpi; "": mp if tensor_parallel_size > 1
    std::string worker_executable = "/proc/self/exe";  // mp: ranks 1.. run `worker_executable worker ...`
    uint64_t seed = 0;                                 // seeds requests that bring no seed of their own
    BlockHashFn block_hash_fn = nullptr;  // tests only: replace the prefix-cache hash (nullptr = xxhash)
    // KV tier below RAM (kv_offload.h): "" = none. Blocks are written through to this
    // directory (bounded by kv_offload_bytes) and loaded from it at admission, across
    // processes and restarts. Needs prefix caching; tensor_parallel_size 1 only for now.
    std::string kv_offload_dir;
    int64_t kv_offload_bytes = int64_t(10) << 30;
    KvLoadMode kv_offload_load_mode = KvLoadMode::Auto;
};

// "auto" (F32 checkpoints stay F32, others become BF16), "float32" or "bfloat16".
Result<DType> resolve_weight_dtype(const std::string& dtype, const ModelConfig& model_config);

struct EngineStats {
    int64_t num_steps = 0;
    int64_t num_prompt_tokens_computed = 0;  // prompt tokens actually run through the model
    int64_t num_prompt_tokens_loaded = 0;    // prompt tokens whose KV came from the KV tier below RAM
    int64_t num_generation_tokens = 0;
    int64_t num_preemptions = 0;
    int64_t prefix_cache_hits = 0;     // blocks
    int64_t prefix_cache_queries = 0;  // blocks
};

class LLMEngine {
  public:
    static Result<std::unique_ptr<LLMEngine>> create(const EngineConfig& config);
    ~LLMEngine();

    // What add_request checks first: the sampling parameters, the prompt's ids and length
    // (prompt_check.h), and that it fits the KV cache.
    Status validate_request(const std::vector<int32_t>& prompt_ids, const SamplingParams& params) const;
    // Validates and queues a request. on_delta (optional) is called from step() with new text/tokens.
    Status add_request(const std::string& request_id, std::vector<int32_t> prompt_ids,
                       const SamplingParams& params, DeltaCallback on_delta = {});
    // Ends a request now (client gone); its blocks are freed at once.
    bool abort_request(const std::string& request_id);
    // Runs one step. Returns the requests that finished in it.
    std::vector<RequestOutput> step();
    bool has_unfinished_requests() const;
    size_t num_unfinished_requests() const { return requests_.size(); }

    const Tokenizer* tokenizer() const { return tokenizer_.get(); }
    const ModelConfig& model_config() const { return executor_->runner().model().config(); }
    const EngineConfig& config() const { return config_; }
    const Scheduler& scheduler() const { return *scheduler_; }
    const BlockManager& block_manager() const { return *block_manager_; }
    const ModelRunner& runner() const { return executor_->runner(); }
    const parallel::Executor& executor() const { return *executor_; }
    parallel::Executor& executor() { return *executor_; }
    // ok, or why the engine can no longer run (a tensor-parallel rank died). Thread-safe.
    Status health() const { return executor_->health(); }
    EngineStats stats() const;
    // The KV tier's counters; nullopt without --kv-offload-dir.
    std::optional<KvOffloadStats> kv_offload_stats() const;
    int64_t max_model_len() const { return executor_->runner().config().max_model_len; }
    // Seconds create() spent loading the weights (the rest of create() sets up the runner).
    double load_seconds() const { return executor_->load_seconds(); }

    // Compiles structured-output constraints for this model's vocabulary (built on
    // first use; thread-safe), so that the server can compile, and reject, a
    // request's constraint on its own thread: add_request then finds it cached.
    // Error when the engine has no tokenizer.
    Result<structured::GrammarCompiler*> grammar_compiler();

  private:
    LLMEngine() = default;
    void start_completion(Completion& completion);
    void fill_runner_sequences(const SchedulerOutput& output);
    Status start_kv_offload();
    void process_sampled(const SchedulerOutput& output, std::span<const SampleResult> results);
    void process_finished(Sequence& seq, std::vector<RequestOutput>& finished_outputs);
    void fail_unfinished_requests(const Error& error, std::vector<RequestOutput>& finished_outputs);
    void finish_completion(Completion& completion, const Sequence& ended);
    // Structured output (llm_engine_structured.cpp).
    Status compile_grammar(Request& request);
    void start_grammar(const Request& request, Sequence& seq) const;
    void fill_token_masks(const SchedulerOutput& output);
    void advance_grammars(const SchedulerOutput& output, std::span<const SampleResult> results);

    EngineConfig config_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<parallel::Executor> executor_;
    std::unique_ptr<BlockManager> block_manager_;
    std::unique_ptr<Scheduler> scheduler_;
    std::vector<int32_t> eos_token_ids_;
    int64_t next_seq_id_ = 0;
    std::unordered_map<std::string, std::unique_ptr<Request>> requests_;
    std::unordered_map<int64_t, Completion*> completion_of_seq_;  // started, unfinished completions
    // Per-step scratch, reused so a step does not reallocate.
    std::vector<RunnerSequence> runner_seqs_;
    std::vector<int32_t> sampled_ids_;
    std::vector<std::vector<int32_t>> suppressed_ids_;
    EngineStats stats_;
    // Structured output: the compiler (built on first use) and one token bitmask row per
    // scheduled sequence; steps with no constrained sequence never touch them.
    std::once_flag grammar_compiler_once_;
    std::unique_ptr<structured::GrammarCompiler> grammar_compiler_;
    Error grammar_compiler_error_;
    std::vector<uint32_t> token_bitmask_;
    std::vector<int32_t> constrained_rows_;
    // Last: destroyed first, it writes its queued blocks while the KV arena and the
    // BlockManager still exist.
    std::unique_ptr<KvOffload> kv_offload_;
};

}  // namespace lmrun
