// A grammar compiled for one vocabulary: its pushdown automaton and the lazily
// filled per-state token mask cache. Immutable apart from that cache (which is
// thread-safe), so one CompiledGrammar serves every request with the same
// constraint at once; each sequence matches it with its own GrammarMatcher.
#pragma once

#include <memory>

#include "core/result.h"
#include "structured/grammar.h"
#include "structured/pushdown_automaton.h"
#include "structured/token_mask_cache.h"
#include "structured/token_vocabulary.h"

namespace lmrun::structured {

class CompiledGrammar {
  public:
    static Result<std::shared_ptr<const CompiledGrammar>> compile(
        const Grammar& grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
        const AutomatonLimits& limits = {});

    const PushdownAutomaton& automaton() const { return automaton_; }
    const TokenVocabulary& vocabulary() const { return *vocabulary_; }
    const TokenMaskCache& mask_cache() const { return *mask_cache_; }
    // The source grammar in EBNF (for debugging and error messages).
    const std::string& ebnf() const { return ebnf_; }
    double compile_seconds() const { return compile_seconds_; }

  private:
    CompiledGrammar() = default;

    PushdownAutomaton automaton_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    std::unique_ptr<TokenMaskCache> mask_cache_;
    std::string ebnf_;
    double compile_seconds_ = 0;
};

}  // namespace lmrun::structured
