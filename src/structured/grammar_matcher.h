// One sequence's position in a compiled grammar. Before each sampling step,
// fill_next_token_bitmask() writes which token ids may come next (bit id % 32 of
// word id / 32): the cached accepted set of each stack top (token_mask_cache.h:
// its state's entry, or its (state, return state) entry), plus the uncertain
// tokens that pass when run against the real stack (checked in trie order, so
// tokens sharing a prefix share its work), plus the end tokens (EOS) where the
// grammar may end. accept_token() then advances on the sampled token's bytes.
//
// Every accepted token leaves a snapshot, so rollback(n) undoes the last n
// tokens; copying a matcher forks it (n > 1 completions from one prompt state).
// A matcher is used by one thread at a time; many matchers share one grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/pda_stepper.h"

namespace lmrun::structured {

class GrammarMatcher {
  public:
    explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

    // False (and no change) if the grammar does not allow the token here. An end
    // token is accepted where the grammar may end, and terminates the matcher.
    bool accept_token(int32_t token_id);
    // Raw bytes (tests, tools): false and no change unless all of them are allowed.
    bool accept_bytes(std::string_view bytes);
    // mask.size() == vocabulary().num_mask_words().
    void fill_next_token_bitmask(std::span<uint32_t> mask);

    bool can_end() const { return current().can_end; }
    bool can_continue() const { return current().configs_end > current().configs_begin; }
    bool is_terminated() const { return current().terminated; }
    int32_t num_accepted_tokens() const { return int32_t(history_.size()) - 1; }
    // Undoes the last num_tokens accepted tokens (clamped to what was accepted).
    void rollback(int32_t num_tokens);

    const CompiledGrammar& grammar() const { return *grammar_; }
    const TokenVocabulary& vocabulary() const { return grammar_->vocabulary(); }

  private:
    struct Snapshot {
        size_t configs_begin;
        size_t configs_end;
        size_t arena_size;
        bool can_end;
        bool terminated;
    };

    const Snapshot& current() const { return history_.back(); }
    std::span<const StackConfig> current_configs() const;
    // Runs `bytes` from the current configurations; on success levels_[bytes.size()]
    // holds the result. Returns (moved through all bytes, reached end at the last).
    std::pair<bool, bool> run_bytes(std::string_view bytes);
    void push_snapshot(const std::vector<StackConfig>& configs, bool can_end, bool terminated);
    const StateTokenMask& cached_mask(StackConfig config) const;
    void check_uncertain(StackConfig config, const StateTokenMask& cached, std::span<uint32_t> mask);

    std::shared_ptr<const CompiledGrammar> grammar_;
    PdaStepper stepper_;
    StackArena arena_;
    std::vector<StackConfig> configs_;  // every snapshot's configurations, back to back
    std::vector<Snapshot> history_;     // [0] = the start; back() = now
    // Scratch, reused between calls.
    std::vector<std::vector<StackConfig>> levels_;
    std::vector<uint32_t> scratch_mask_;
    std::vector<const StateTokenMask*> cached_;  // per current configuration
};

}  // namespace lmrun::structured
