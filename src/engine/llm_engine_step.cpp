// LLMEngine::step and what it does with the sampled tokens.
#include <algorithm>

#include "core/check.h"
#include "core/op_profiler.h"
#include "core/timer.h"
#include "engine/llm_engine.h"

namespace lmrun {

void LLMEngine::fill_runner_sequences(const SchedulerOutput& output) {
    runner_seqs_.clear();
    if (suppressed_ids_.size() < output.scheduled.size()) suppressed_ids_.resize(output.scheduled.size());
    for (size_t i = 0; i < output.scheduled.size(); ++i) {
        const ScheduledSequence& entry = output.scheduled[i];
        const Sequence& seq = *entry.seq;
        const Completion& completion = *completion_of_seq_.at(seq.seq_id);
        const SamplingParams& params = seq.params;
        RunnerSequence runner_seq;
        runner_seq.token_ids = seq.token_ids;
        runner_seq.block_table = seq.block_table;
        runner_seq.num_computed_tokens = seq.num_computed_tokens;
        runner_seq.num_new_tokens = entry.num_new_tokens;
        runner_seq.sample = entry.sample;
        SamplingInputs& sampling = runner_seq.sampling;
        sampling.temperature = params.temperature;
        sampling.top_k = params.top_k;
        sampling.top_p = params.top_p;
        sampling.min_p = params.min_p;
        sampling.repetition_penalty = params.repetition_penalty;
        sampling.presence_penalty = params.presence_penalty;
        sampling.frequency_penalty = params.frequency_penalty;
        sampling.seed = completion.seed;
        sampling.step = seq.num_tokens();
        sampling.prompt_ids = seq.prompt_token_ids();
        sampling.output_ids = seq.completion_token_ids();
        sampling.num_logprobs = params.logprobs ? *params.logprobs : -1;
        // min_tokens: end-of-sequence and stop tokens cannot be sampled yet.
        std::vector<int32_t>& suppressed = suppressed_ids_[i];
        suppressed.clear();
        if (seq.num_completion_tokens() < params.min_tokens) {
            if (!params.ignore_eos)
                suppressed.insert(suppressed.end(), eos_token_ids_.begin(), eos_token_ids_.end());
            suppressed.insert(suppressed.end(), params.stop_token_ids.begin(), params.stop_token_ids.end());
        }
        sampling.suppressed_ids = suppressed;
        runner_seqs_.push_back(runner_seq);
    }
}

namespace {

TokenLogprob to_token_logprob(const SampleResult& result) {
    TokenLogprob logprob;
    logprob.token_id = result.token_id;
    logprob.logprob = result.logprob;
    for (int32_t i = 0; i < result.num_top; ++i)
        logprob.top.emplace_back(result.top_ids[i], result.top_logprobs[i]);
    return logprob;
}

}  // namespace

// Output processing of every sequence that sampled: text, stop strings, deltas.
void LLMEngine::process_sampled(const SchedulerOutput& output, std::span<const SampleResult> results) {
    const double now = now_seconds();
    size_t next_result = 0;
    for (const ScheduledSequence& entry : output.scheduled) {
        if (!entry.sample) continue;
        const SampleResult& result = results[next_result++];
        Sequence& seq = *entry.seq;
        Completion& completion = *completion_of_seq_.at(seq.seq_id);
        Request& request = *completion.request;
        if (request.metrics.first_token_time == 0) {
            request.metrics.first_token_time = now;
            request.metrics.num_cached_tokens = seq.num_cached_tokens;
            for (size_t index = 1; index < request.completions.size(); ++index)
                start_completion(request.completions[index]);
        }
        request.metrics.last_token_time = now;
        ++request.metrics.num_generation_tokens;
        ++stats_.num_generation_tokens;
        CompletionOutput& completion_output = completion.output;
        OutputProcessor& processor = *completion.processor;
        completion_output.token_ids.push_back(result.token_id);
        if (request.params.logprobs) completion_output.logprobs.push_back(to_token_logprob(result));
        bool stop_string = processor.add_token(result.token_id);
        if (stop_string && !seq.is_finished()) {
            scheduler_->finish(seq.seq_id, FinishReason::Stop);
            seq.stop_reason = processor.matched_stop();
        }
        if (seq.is_finished()) processor.finish();
        if (request.on_delta) {
            CompletionDelta delta;
            delta.request_id = request.id;
            delta.index = completion_output.index;
            delta.text = processor.take_new_text();
            delta.token_ids.push_back(result.token_id);
            if (request.params.logprobs) delta.logprobs.push_back(completion_output.logprobs.back());
            delta.finished = seq.is_finished();
            delta.finish_reason = seq.finish_reason;
            request.on_delta(delta);
        }
    }
}

// Ends `completion` the way `ended` (its own sequence, or for a completion that never started,
// the first completion's) ended. A failure or abort never reaches process_sampled, so its final
// delta is reported here.
void LLMEngine::finish_completion(Completion& completion, const Sequence& ended) {
    CompletionOutput& output = completion.output;
    if (completion.processor) {
        completion.processor->finish();
        output.text = completion.processor->text();
    }
    output.finish_reason = ended.finish_reason;
    output.stop_reason = ended.stop_reason;
    output.error_message = ended.error_message;
    Request& request = *completion.request;
    if (request.on_delta &&
        (ended.finish_reason == FinishReason::Error || ended.finish_reason == FinishReason::Abort)) {
        CompletionDelta delta;
        delta.request_id = request.id;
        delta.index = output.index;
        if (completion.processor) delta.text = completion.processor->take_new_text();
        delta.finished = true;
        delta.finish_reason = ended.finish_reason;
        delta.error_message = ended.error_message;
        request.on_delta(delta);
    }
}

void LLMEngine::process_finished(Sequence& seq, std::vector<RequestOutput>& finished_outputs) {
    auto found = completion_of_seq_.find(seq.seq_id);
    if (found == completion_of_seq_.end()) return;
    Completion& completion = *found->second;
    completion_of_seq_.erase(found);
    Request& request = *completion.request;
    finish_completion(completion, seq);
    // The first completion ended before the others started: they share its fate.
    for (Completion& other : request.completions) {
        if (!other.is_started()) finish_completion(other, seq);
    }
    if (!request.is_finished()) return;
    request.metrics.finished_time = now_seconds();
    RequestOutput output;
    output.request_id = request.id;
    output.prompt_token_ids = std::move(request.prompt_ids);
    output.outputs.reserve(request.completions.size());
    for (Completion& finished : request.completions) output.outputs.push_back(std::move(finished.output));
    output.finished = true;
    output.metrics = request.metrics;
    finished_outputs.push_back(std::move(output));
    requests_.erase(finished_outputs.back().request_id);  // not request.id: erase destroys it
}

bool LLMEngine::abort_request(const std::string& request_id) {
    auto found = requests_.find(request_id);
    if (found == requests_.end()) return false;
    std::vector<std::shared_ptr<Sequence>> started;
    for (const Completion& completion : found->second->completions) {
        if (completion.is_started()) started.push_back(completion.seq);
    }
    for (const auto& seq : started) {
        if (!seq->is_finished()) scheduler_->finish(seq->seq_id, FinishReason::Abort);
    }
    // Every completion ends here (deltas report it); the request's output is not returned.
    std::vector<RequestOutput> ignored;
    for (const auto& seq : started) process_finished(*seq, ignored);
    return true;
}

// The ranks cannot run steps any more: every request in flight ends with the error.
void LLMEngine::fail_unfinished_requests(const Error& error, std::vector<RequestOutput>& finished_outputs) {
    std::vector<std::shared_ptr<Sequence>> unfinished;
    for (const auto& [seq_id, completion] : completion_of_seq_)
        if (!completion->seq->is_finished()) unfinished.push_back(completion->seq);
    for (const auto& seq : unfinished) {
        seq->error_message = error.message;
        scheduler_->finish(seq->seq_id, FinishReason::Error);
    }
    // A request whose other completions never started finishes with the one that did.
    for (const auto& seq : unfinished) process_finished(*seq, finished_outputs);
}

std::vector<RequestOutput> LLMEngine::step() {
    std::vector<RequestOutput> finished_outputs;
    if (Status healthy = health(); !healthy.ok()) {
        fail_unfinished_requests(healthy.error(), finished_outputs);
        return finished_outputs;
    }
    SchedulerOutput output = [&] {
        ScopedOp scope(Op::Schedule);
        return scheduler_->schedule();
    }();
    for (Sequence* seq : output.failed) process_finished(*seq, finished_outputs);
    if (output.scheduled.empty()) return finished_outputs;
    ++stats_.num_steps;
    const double now = now_seconds();
    int64_t num_step_prompt_tokens = 0;
    for (const ScheduledSequence& entry : output.scheduled) {
        Request& request = *completion_of_seq_.at(entry.seq->seq_id)->request;
        if (request.metrics.first_scheduled_time == 0) request.metrics.first_scheduled_time = now;
        if (entry.seq->num_computed_tokens < entry.seq->num_prompt_tokens) {
            num_step_prompt_tokens +=
                std::min(entry.num_new_tokens, entry.seq->num_prompt_tokens - entry.seq->num_computed_tokens);
        }
    }
    stats_.num_prompt_tokens_computed += num_step_prompt_tokens;
    {
        ScopedOp scope(Op::PrepareInputs);
        fill_runner_sequences(output);
        fill_token_masks(output);
    }
    const double execute_start = now_seconds();
    Result<std::span<const SampleResult>> executed = executor_->execute_model(runner_seqs_);
    // The KV tier's crossover: what a prompt token costs to compute here.
    if (kv_offload_) kv_offload_->record_prefill(num_step_prompt_tokens, now_seconds() - execute_start);
    if (!executed.ok()) {
        fail_unfinished_requests(executed.error(), finished_outputs);
        return finished_outputs;
    }
    std::span<const SampleResult> results = executed.value();
    ScopedOp scope(Op::OutputProcessing);
    sampled_ids_.clear();
    for (const SampleResult& result : results) sampled_ids_.push_back(result.token_id);
    scheduler_->postprocess(output, sampled_ids_);
    if (kv_offload_) kv_offload_->after_step();
    advance_grammars(output, results);
    process_sampled(output, results);
    for (const ScheduledSequence& entry : output.scheduled) {
        if (entry.seq->is_finished()) process_finished(*entry.seq, finished_outputs);
    }
    return finished_outputs;
}

}  // namespace lmrun
