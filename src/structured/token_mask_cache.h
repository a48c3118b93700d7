// The adaptive token mask cache (the idea XGrammar published): for an automaton
// state at the top of a stack, most tokens can be decided from that state alone.
// A walk of the vocabulary trie from the state, calls into other rules followed
// locally, sorts every text token into
//   accepted  - all its bytes are consumed without leaving the state's rule;
//   rejected  - some byte fails before the rule could end;
//   uncertain - the rule can end inside the token and the rest depends on
//               whatever called it (the stack below), so it is checked at run
//               time against the real stack.
// Tokens of a rule that nothing calls (the root, hence a whole non-recursive
// JSON Schema) are never uncertain: leaving that rule means leaving the grammar.
//
// Entries are computed lazily, once per state (std::call_once; safe from the
// threads that fill a batch's masks in parallel), and stored in whichever form
// is smallest: a list of accepted ids, a list of rejected ids, or a bitset.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "structured/pushdown_automaton.h"
#include "structured/token_vocabulary.h"

namespace lmrun::structured {

struct StateTokenMask {
    enum class Storage { AcceptedIds, RejectedIds, Bitset };
    Storage storage = Storage::AcceptedIds;
    std::vector<int32_t> ids;        // AcceptedIds / RejectedIds (uncertain ones in neither)
    std::vector<uint32_t> bits;      // Bitset of accepted ids
    std::vector<int32_t> uncertain;  // trie positions, ascending
    int32_t num_accepted = 0;

    // Overwrites `mask` (one bit per token id) with the accepted tokens.
    void fill_accepted(const TokenVocabulary& vocabulary, std::span<uint32_t> mask) const;
};

StateTokenMask compute_state_token_mask(const PushdownAutomaton& pda, const TokenVocabulary& vocabulary,
                                        int32_t state);

class TokenMaskCache {
  public:
    TokenMaskCache(const PushdownAutomaton& pda, std::shared_ptr<const TokenVocabulary> vocabulary);

    const StateTokenMask& get(int32_t state) const;
    int64_t num_computed() const;

  private:
    struct Entry {
        std::once_flag once;
        StateTokenMask mask;
    };
    const PushdownAutomaton& pda_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    std::unique_ptr<Entry[]> entries_;
    mutable std::atomic<int64_t> num_computed_{0};
};

}  // namespace lmrun::structured
