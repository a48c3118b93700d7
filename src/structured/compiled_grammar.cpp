#include "structured/compiled_grammar.h"

#include "core/timer.h"

namespace lmrun::structured {

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(
    const Grammar& grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
    const AutomatonLimits& limits) {
    Stopwatch stopwatch;
    std::shared_ptr<CompiledGrammar> compiled(new CompiledGrammar());
    LMRUN_ASSIGN_OR_RETURN(compiled->automaton_, PushdownAutomaton::build(grammar, limits));
    compiled->vocabulary_ = std::move(vocabulary);
    // The cache refers to the automaton member: it lives exactly as long.
    compiled->mask_cache_ = std::make_unique<TokenMaskCache>(compiled->automaton_, compiled->vocabulary_);
    compiled->ebnf_ = grammar.to_ebnf();
    compiled->compile_seconds_ = stopwatch.elapsed_seconds();
    return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

}  // namespace lmrun::structured
