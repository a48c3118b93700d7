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
// A state whose rule ends inside many tokens (a small rule called over and over,
// like one character of a long bounded string: every multi-byte token leaves it)
// would leave most of the vocabulary uncertain and checked at every step. For
// such states there are also entries keyed by (state, the return state below
// it): the walk continues into the caller's rule, so only tokens that leave both
// rules stay uncertain. The matcher picks them where the state's own entry is
// mostly uncertain (pair_worthwhile()).
//
// Entries are computed lazily, once per state or pair (std::call_once; safe from
// the threads that fill a batch's masks in parallel), and stored in whichever
// form is smallest: a list of accepted ids, a list of rejected ids, or a bitset.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
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

// From `state` at the stack bottom, or (return_state >= 0) with `return_state` below it.
StateTokenMask compute_state_token_mask(const PushdownAutomaton& pda, const TokenVocabulary& vocabulary,
                                        int32_t state, int32_t return_state = -1);

class TokenMaskCache {
  public:
    TokenMaskCache(const PushdownAutomaton& pda, std::shared_ptr<const TokenVocabulary> vocabulary);

    const StateTokenMask& get(int32_t state) const;
    // The entry of `state` with `return_state` below it on the stack.
    const StateTokenMask& get(int32_t state, int32_t return_state) const;
    // Whether `entry` (a state's own) leaves so many tokens uncertain that the pair
    // entries are worth computing (a fixed share of the vocabulary's text tokens).
    bool pair_worthwhile(const StateTokenMask& entry) const;
    int64_t num_computed() const;
    int64_t num_pairs_computed() const;

  private:
    struct Entry {
        std::once_flag once;
        StateTokenMask mask;
    };
    const PushdownAutomaton& pda_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    std::unique_ptr<Entry[]> entries_;
    mutable std::mutex pairs_mutex_;  // guards the map, not the entries (each has its once flag)
    mutable std::unordered_map<int64_t, std::unique_ptr<Entry>> pair_entries_;
    mutable std::atomic<int64_t> num_computed_{0};
    mutable std::atomic<int64_t> num_pairs_computed_{0};
};

}  // namespace lmrun::structured
