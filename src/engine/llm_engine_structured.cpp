// LLMEngine's structured output: compiling a request's constraint, one grammar
// matcher per sequence, the token bitmask each constrained sequence samples
// under, and advancing the matchers on the sampled tokens. Unconstrained steps
// only check a null pointer per sequence.
#include "core/parallel.h"
#include "engine/llm_engine.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"

namespace lmrun {

Result<structured::GrammarCompiler*> LLMEngine::grammar_compiler() {
    std::call_once(grammar_compiler_once_, [this] {
        if (!tokenizer_) {
            grammar_compiler_error_ =
                make_error("structured outputs need a tokenizer (the model folder has none)");
            return;
        }
        auto vocabulary = structured::TokenVocabulary::from_tokenizer(*tokenizer_, model_config().vocab_size,
                                                                      eos_token_ids_);
        if (!vocabulary.ok()) {
            grammar_compiler_error_ = vocabulary.error();
            return;
        }
        grammar_compiler_ = std::make_unique<structured::GrammarCompiler>(*vocabulary);
        // Every scheduled sequence may need a bitmask row; allocated once, not in a step.
        token_bitmask_.assign(
            size_t(runner().config().max_num_seqs) * size_t((*vocabulary)->num_mask_words()), 0);
        constrained_rows_.reserve(size_t(runner().config().max_num_seqs));
    });
    if (!grammar_compiler_) return grammar_compiler_error_;
    return grammar_compiler_.get();
}

Status LLMEngine::compile_grammar(Request& request) {
    if (!request.params.structured_outputs) return ok_status();
    LMRUN_ASSIGN_OR_RETURN(structured::GrammarCompiler * compiler, grammar_compiler());
    auto compiled = compiler->compile(*request.params.structured_outputs);
    if (!compiled.ok()) return with_subject(compiled.error(), "structured_outputs");
    request.grammar = *compiled;
    return ok_status();
}

void LLMEngine::start_grammar(const Request& request, Sequence& seq) const {
    if (!request.grammar) return;
    seq.grammar_matcher = std::make_unique<structured::GrammarMatcher>(request.grammar);
    seq.grammar_active = !request.params.structured_outputs->activate_after_token_id.has_value();
}

// runner_seqs_[i] corresponds to output.scheduled[i].
void LLMEngine::fill_token_masks(const SchedulerOutput& output) {
    constrained_rows_.clear();
    for (size_t i = 0; i < output.scheduled.size(); ++i) {
        const ScheduledSequence& entry = output.scheduled[i];
        if (entry.sample && entry.seq->grammar_matcher && entry.seq->grammar_active)
            constrained_rows_.push_back(int32_t(i));
    }
    if (constrained_rows_.empty()) return;
    const size_t words = size_t(grammar_compiler_->vocabulary().num_mask_words());
    auto fill_row = [&](int64_t k) {
        const size_t row = size_t(constrained_rows_[size_t(k)]);
        output.scheduled[row].seq->grammar_matcher->fill_next_token_bitmask(
            std::span<uint32_t>(token_bitmask_.data() + row * words, words));
    };
    if (constrained_rows_.size() == 1) {
        fill_row(0);
    } else {
        // Masks of different sequences are independent: one per thread.
        parallel_for(int64_t(constrained_rows_.size()), [&](int64_t begin, int64_t end) {
            for (int64_t k = begin; k < end; ++k) fill_row(k);
        });
    }
    for (int32_t row : constrained_rows_) {
        SamplingInputs& sampling = runner_seqs_[size_t(row)].sampling;
        sampling.allowed_token_mask = token_bitmask_.data() + size_t(row) * words;
        // A grammar that can only end must be allowed to, min_tokens or not.
        if (!output.scheduled[size_t(row)].seq->grammar_matcher->can_continue()) sampling.suppressed_ids = {};
    }
}

void LLMEngine::advance_grammars(const SchedulerOutput& output, std::span<const SampleResult> results) {
    size_t next_result = 0;
    for (const ScheduledSequence& entry : output.scheduled) {
        if (!entry.sample) continue;
        const int32_t token = results[next_result++].token_id;
        Sequence& seq = *entry.seq;
        if (!seq.grammar_matcher) continue;
        if (!seq.grammar_active) {
            // Reasoning: the constraint starts after the end-of-thinking token.
            seq.grammar_active = token == *seq.params.structured_outputs->activate_after_token_id;
            continue;
        }
        if (!seq.grammar_matcher->accept_token(token)) {
            if (!seq.is_finished()) {
                seq.error_message = "internal error: a sampled token is outside the grammar";
                scheduler_->finish(seq.seq_id, FinishReason::Error);
            }
            continue;
        }
        // With ignore_eos the scheduler does not stop at EOS; a finished grammar does.
        if (seq.grammar_matcher->is_terminated() && !seq.is_finished())
            scheduler_->finish(seq.seq_id, FinishReason::Stop);
    }
}

}  // namespace lmrun
