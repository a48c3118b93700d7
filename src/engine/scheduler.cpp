#include "engine/scheduler.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "core/logging.h"
#include "engine/prompt_check.h"

namespace lmrun {

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& block_manager,
                     std::vector<int32_t> eos_token_ids)
    : config_(config), block_manager_(block_manager), eos_token_ids_(std::move(eos_token_ids)) {
    LMRUN_CHECK(config.max_num_seqs >= 1 && config.max_num_batched_tokens >= 1 && config.max_model_len >= 1,
                "bad scheduler config");
    cached_block_ids_.reserve(static_cast<size_t>(block_manager.num_blocks()));
}

void Scheduler::add(std::shared_ptr<Sequence> seq) {
    LMRUN_CHECK(seq != nullptr && !seq->is_finished(), "add of a null or finished sequence");
    seq->status = SequenceStatus::Waiting;
    waiting_.push_back(std::move(seq));
}

SchedulerOutput Scheduler::schedule() {
    SchedulerOutput output;
    output.scheduled.reserve(static_cast<size_t>(config_.max_num_seqs));
    int64_t token_budget = config_.max_num_batched_tokens;
    size_t index = 0;
    while (index < running_.size() && token_budget > 0) {
        Sequence& seq = *running_[index];
        const int64_t num_remaining = seq.num_tokens() - seq.num_computed_tokens;
        LMRUN_CHECK(num_remaining >= 1, "running sequence with nothing to compute");
        const int64_t num_new_tokens = std::min(num_remaining, token_budget);
        // On false, seq has left running_ and the next sequence took its index.
        if (!schedule_running(seq, num_new_tokens, output)) continue;
        token_budget -= num_new_tokens;
        ++index;
    }
    // After a preemption the cache is full: admitting more would only thrash.
    if (output.preempted.empty()) schedule_waiting(token_budget, output);

    return output;
}

bool Scheduler::schedule_running(Sequence& seq, int64_t num_new_tokens, SchedulerOutput& output) {
    while (!block_manager_.can_append(seq, num_new_tokens)) {
        Sequence& victim = *running_.back();
        if (&victim != &seq) {
            preempt(victim, output);
            continue;
        }
        // seq is the most recently admitted sequence left: the ones before it were
        // scheduled in this step already, so seq yields to them.
        if (running_.size() > 1) {
            preempt(seq, output);
            return false;
        }
        // Alone, with every other block free: the cache is too small for it.
        const int64_t num_tokens = seq.num_computed_tokens + num_new_tokens;
        fail(seq,
             fmt::format("sequence of {} tokens needs {} KV blocks but the cache has {}", num_tokens,
                         block_manager_.num_blocks_for(num_tokens), block_manager_.num_blocks()),
             output);
        return false;
    }
    block_manager_.may_append(seq, num_new_tokens);
    push_scheduled(seq, num_new_tokens, output);
    return true;
}

void Scheduler::schedule_waiting(int64_t& token_budget, SchedulerOutput& output) {
    while (!waiting_.empty() && token_budget > 0 &&
           static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
        Sequence& seq = *waiting_.front();
        if (!check_admissible(seq, output)) continue;  // failed and removed
        const int64_t num_computed = block_manager_.match_prefix(seq, cached_block_ids_);
        int64_t num_loadable = 0;
        if (prefix_loader_ && block_manager_.prefix_caching_enabled()) {
            const int64_t max_blocks = block_manager_.max_cached_blocks(seq);
            const auto first_block = static_cast<int64_t>(cached_block_ids_.size());
            if (max_blocks > first_block)
                num_loadable =
                    prefix_loader_->num_loadable_blocks(seq, first_block, max_blocks - first_block);
        }
        const int64_t num_loadable_tokens = num_loadable * block_manager_.block_size();
        int64_t num_new_tokens = seq.num_tokens() - num_computed - num_loadable_tokens;
        if (!config_.enable_chunked_prefill && num_new_tokens > token_budget) break;
        num_new_tokens = std::min(num_new_tokens, token_budget);
        // FIFO: later sequences wait too.
        if (!block_manager_.can_allocate(seq, cached_block_ids_, num_loadable_tokens + num_new_tokens)) break;
        block_manager_.allocate(seq, cached_block_ids_, num_loadable_tokens + num_new_tokens);
        if (num_loadable > 0) {
            // Blocks the tier failed to provide are computed instead, within the budget (the
            // table already covers them).
            const int64_t num_missed_tokens = num_loadable_tokens - load_from_tier(seq, num_loadable);
            num_new_tokens = std::min(num_new_tokens + num_missed_tokens, token_budget);
        }
        seq.status = SequenceStatus::Running;
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
        push_scheduled(seq, num_new_tokens, output);
        token_budget -= num_new_tokens;
    }
}

// Fills the fresh blocks after seq's RAM-cached ones from the tier and counts the loaded ones
// as computed and cached. Returns the tokens loaded.
int64_t Scheduler::load_from_tier(Sequence& seq, int64_t num_loadable_blocks) {
    const int64_t block_size = block_manager_.block_size();
    const int64_t first_block = seq.num_computed_tokens / block_size;
    const int64_t num_loaded = prefix_loader_->load_blocks(seq, first_block, num_loadable_blocks);
    LMRUN_CHECK(num_loaded >= 0 && num_loaded <= num_loadable_blocks, "loaded more blocks than asked");
    const int64_t num_loaded_tokens = num_loaded * block_size;
    seq.num_computed_tokens += num_loaded_tokens;
    seq.num_cached_tokens += num_loaded_tokens;
    num_loaded_tokens_ += num_loaded_tokens;
    // Findable in RAM from now on; not written back to the tier they came from.
    block_manager_.cache_computed_blocks(seq, /*record=*/false);
    return num_loaded_tokens;
}

Status Scheduler::check_prompt(int64_t num_tokens) const {
    LMRUN_RETURN_IF_ERROR(check_prompt_length(num_tokens, config_.max_model_len));
    const int64_t num_blocks_needed = block_manager_.num_blocks_for(num_tokens);
    if (num_blocks_needed > block_manager_.num_blocks()) {
        return make_error("prompt of {} tokens needs {} KV blocks but the cache has {}", num_tokens,
                          num_blocks_needed, block_manager_.num_blocks());
    }
    if (!config_.enable_chunked_prefill && num_tokens > config_.max_num_batched_tokens) {
        return make_error(
            "prompt of {} tokens exceeds max_num_batched_tokens {} and chunked prefill is disabled",
            num_tokens, config_.max_num_batched_tokens);
    }
    return ok_status();
}

bool Scheduler::check_admissible(Sequence& seq, SchedulerOutput& output) {
    // Checked again at admission: a preempted sequence has grown since add().
    Status status = check_prompt(seq.num_tokens());
    if (status.ok()) return true;
    fail(seq, status.error().message, output);
    return false;
}

void Scheduler::preempt(Sequence& seq, SchedulerOutput& output) {
    LMRUN_CHECK(running_.back().get() == &seq, "only the most recently admitted sequence is preempted");
    block_manager_.deallocate(seq);
    seq.status = SequenceStatus::Waiting;
    ++seq.num_preemptions;
    ++num_preemptions_;
    waiting_.push_front(std::move(running_.back()));
    running_.pop_back();
    output.preempted.push_back(&seq);
}

void Scheduler::fail(Sequence& seq, std::string message, SchedulerOutput& output) {
    log_warn("sequence {} failed: {}", seq.seq_id, message);
    seq.error_message = std::move(message);
    finish_sequence(seq, FinishReason::Error);
    // Erase last: the queue may hold the only reference the scheduler has.
    auto is_seq = [&seq](const std::shared_ptr<Sequence>& s) { return s.get() == &seq; };
    output.failed.push_back(&seq);
    std::erase_if(running_, is_seq);
    std::erase_if(waiting_, is_seq);
}

// As vLLM's check_stop: EOS (unless ignored) before stop_token_ids, and only a stop_token_ids
// match reports its token as the stop_reason.
FinishReason Scheduler::check_stop(Sequence& seq) const {
    const SamplingParams& params = seq.params;
    const int32_t token_id = seq.last_token();
    // min_tokens suppresses the token stops only; length limits always apply.
    if (seq.num_completion_tokens() >= params.min_tokens) {
        auto contains = [token_id](const std::vector<int32_t>& ids) {
            return std::find(ids.begin(), ids.end(), token_id) != ids.end();
        };
        if (!params.ignore_eos && contains(eos_token_ids_)) return FinishReason::Stop;
        if (contains(params.stop_token_ids)) {
            seq.stop_reason = token_id;
            return FinishReason::Stop;
        }
    }
    if (seq.num_completion_tokens() >= params.max_tokens) return FinishReason::Length;
    if (seq.num_tokens() >= config_.max_model_len) return FinishReason::Length;
    return FinishReason::None;
}

std::vector<Sequence*> Scheduler::postprocess(const SchedulerOutput& output,
                                              std::span<const int32_t> sampled_token_ids) {
    std::vector<Sequence*> finished;
    size_t next_sampled = 0;
    for (const ScheduledSequence& entry : output.scheduled) {
        Sequence& seq = *entry.seq;
        int32_t token_id = -1;
        if (entry.sample) {
            LMRUN_CHECK(next_sampled < sampled_token_ids.size(),
                        "fewer sampled tokens than sampling sequences");
            token_id = sampled_token_ids[next_sampled++];
        }
        if (seq.is_finished()) continue;  // finished (aborted) between schedule() and now
        seq.num_computed_tokens += entry.num_new_tokens;
        block_manager_.cache_computed_blocks(seq);
        if (!entry.sample) continue;
        seq.append_token(token_id);
        const FinishReason reason = check_stop(seq);
        if (reason == FinishReason::None) continue;
        finish_sequence(seq, reason);
        finished.push_back(&seq);
    }
    LMRUN_CHECK(next_sampled == sampled_token_ids.size(), "more sampled tokens than sampling sequences");
    if (!finished.empty()) std::erase_if(running_, [](const auto& s) { return s->is_finished(); });
    return finished;
}

bool Scheduler::finish(int64_t seq_id, FinishReason reason) {
    for (auto* queue : {&running_, &waiting_}) {
        auto it = std::find_if(queue->begin(), queue->end(),
                               [seq_id](const auto& s) { return s->seq_id == seq_id; });
        if (it == queue->end()) continue;
        finish_sequence(**it, reason);
        queue->erase(it);
        return true;
    }
    return false;
}

void Scheduler::finish_sequence(Sequence& seq, FinishReason reason) {
    block_manager_.deallocate(seq);
    seq.status = SequenceStatus::Finished;
    seq.finish_reason = reason;
}

void Scheduler::push_scheduled(Sequence& seq, int64_t num_new_tokens, SchedulerOutput& output) {
    const bool sample = seq.num_computed_tokens + num_new_tokens == seq.num_tokens();
    output.scheduled.push_back(ScheduledSequence{&seq, num_new_tokens, sample});
}

}  // namespace lmrun
