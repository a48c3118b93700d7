// Scheduler: decides WHAT runs each step (nano-vLLM's Scheduler, with vLLM v1's
// chunked prefill). Each step first continues the running sequences in admission
// order (a decode of 1 token, or the next chunk of a chunked prefill), then admits
// waiting sequences FIFO while the token budget (max_num_batched_tokens), the
// sequence slots (max_num_seqs) and free KV blocks allow; the last admitted prompt
// may be cut into chunks. Running decodes and a prefill chunk share a step (mixed
// steps). When a running sequence needs a block and none is free, the most
// recently admitted running sequence is preempted by recompute: it releases its
// blocks and goes to the front of the waiting queue, keeping its generated tokens,
// which are recomputed with its prompt on re-admission. A sequence that cannot fit
// in the whole cache finishes with FinishReason::Error instead of waiting forever.
//
// A tier below the RAM prefix cache (kv_offload.h) extends a prefix match: at admission,
// after the RAM lookup, the blocks it can load are allocated with the sequence and filled
// before the step runs, so the step computes only the rest.
//
// Not thread-safe: one engine thread calls everything (abort requests included).
// Lifetime: the caller keeps a shared_ptr to each sequence it adds at least until it
// has seen the sequence finish; the Sequence* in outputs point to those objects.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "engine/block_manager.h"
#include "engine/sequence.h"

namespace lmrun {

// Blocks of a sequence's prompt that a tier below RAM can provide.
class PrefixLoader {
  public:
    virtual ~PrefixLoader() = default;
    // How many consecutive full blocks from block index first_block on (at most max_blocks)
    // the tier holds and would load rather than have them recomputed.
    virtual int64_t num_loadable_blocks(const Sequence& seq, int64_t first_block, int64_t max_blocks) = 0;
    // Fills seq.block_table[first_block, first_block + num_blocks) (fresh blocks) from the
    // tier; returns how many consecutive ones from first_block were loaded.
    virtual int64_t load_blocks(const Sequence& seq, int64_t first_block, int64_t num_blocks) = 0;
};

struct SchedulerConfig {
    int64_t max_num_seqs = 64;              // running sequences at once
    int64_t max_num_batched_tokens = 2048;  // tokens computed per step, all sequences together
    int64_t max_model_len = 4096;           // prompt + completion tokens of one sequence
    bool enable_chunked_prefill = true;     // false: a prompt is prefilled in one step or waits
};

// The step computes seq->token_ids[num_computed_tokens, num_computed_tokens + num_new_tokens)
// (num_computed_tokens as it is when schedule() returns).
struct ScheduledSequence {
    Sequence* seq;
    int64_t num_new_tokens;
    bool sample;  // the step reaches the sequence's last known token: sample the next one
};

struct SchedulerOutput {
    std::vector<ScheduledSequence> scheduled;  // running sequences first, then admitted ones
    std::vector<Sequence*> preempted;          // now waiting again, without blocks
    std::vector<Sequence*> failed;             // finished with FinishReason::Error this step
};

class Scheduler {
  public:
    Scheduler(const SchedulerConfig& config, BlockManager& block_manager, std::vector<int32_t> eos_token_ids);

    // Whether a sequence of num_tokens tokens could ever be admitted: non-empty, leaving room
    // within max_model_len (check_prompt_length), fitting in the whole KV cache (and in one
    // step without chunked prefill). The engine calls it before add() to reject a request up
    // front (e.g. HTTP 400).
    Status check_prompt(int64_t num_tokens) const;

    // Queues a new sequence (status Waiting). One that fails check_prompt() is not
    // lost: it finishes with FinishReason::Error when it reaches the queue's front.
    void add(std::shared_ptr<Sequence> seq);

    SchedulerOutput schedule();

    // Consulted at admission after the RAM prefix cache (nullptr: none). Not owned.
    void set_prefix_loader(PrefixLoader* loader) { prefix_loader_ = loader; }
    // Prompt tokens whose KV came from the prefix loader instead of being computed.
    int64_t num_loaded_tokens() const { return num_loaded_tokens_; }

    // After the model ran `output`: advances num_computed_tokens, registers newly full
    // blocks in the prefix cache, appends the sampled token of each `sample` entry
    // (sampled_token_ids holds one per such entry, in order), applies the token-level
    // stop rules (a stop_token_ids match sets seq.stop_reason; EOS does not) and frees
    // finished sequences' blocks. Returns the sequences that finished in this step.
    std::vector<Sequence*> postprocess(const SchedulerOutput& output,
                                       std::span<const int32_t> sampled_token_ids);

    // Ends a sequence now (client gone: Abort; stop string matched: Stop) and frees
    // its blocks. Returns false if no unfinished sequence has this id.
    bool finish(int64_t seq_id, FinishReason reason);

    bool has_unfinished() const { return !waiting_.empty() || !running_.empty(); }
    size_t num_waiting() const { return waiting_.size(); }
    size_t num_running() const { return running_.size(); }
    int64_t num_preemptions() const { return num_preemptions_; }
    // Queues in order (front first), for metrics and tests.
    const std::deque<std::shared_ptr<Sequence>>& waiting() const { return waiting_; }
    const std::deque<std::shared_ptr<Sequence>>& running() const { return running_; }

  private:
    bool schedule_running(Sequence& seq, int64_t num_new_tokens, SchedulerOutput& output);
    void schedule_waiting(int64_t& token_budget, SchedulerOutput& output);
    bool check_admissible(Sequence& seq, SchedulerOutput& output);
    void preempt(Sequence& seq, SchedulerOutput& output);
    void fail(Sequence& seq, std::string message, SchedulerOutput& output);
    FinishReason check_stop(Sequence& seq) const;
    void finish_sequence(Sequence& seq, FinishReason reason);
    void push_scheduled(Sequence& seq, int64_t num_new_tokens, SchedulerOutput& output);
    int64_t load_from_tier(Sequence& seq, int64_t num_loadable_blocks);

    SchedulerConfig config_;
    BlockManager& block_manager_;
    std::vector<int32_t> eos_token_ids_;
    std::deque<std::shared_ptr<Sequence>> waiting_;
    std::deque<std::shared_ptr<Sequence>> running_;  // admission order: back = most recent
    std::vector<int32_t> cached_block_ids_;          // scratch for BlockManager::match_prefix
    int64_t num_preemptions_ = 0;
    PrefixLoader* prefix_loader_ = nullptr;
    int64_t num_loaded_tokens_ = 0;
};

}  // namespace lmrun
