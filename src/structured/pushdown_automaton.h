// The byte-level pushdown automaton a Grammar compiles to. Each automaton rule
// (the root, every recursive grammar rule, and rules or repetitions too large to
// copy into their users) is a DFA over bytes whose states may also *call*
// another rule: push the return state, run the callee from its start, and pop
// back when the callee reaches a final state. All other grammar rules are
// inlined into their callers, so a typical JSON Schema becomes a single DFA and
// matching is a table lookup per byte.
//
// States of all rules share one numbering; transitions are a dense table over
// byte classes (bytes no rule tells apart share a class). The automaton is
// trimmed: every state can still reach a final state of its rule, every call
// targets a rule that can finish, so any stack the matcher builds can complete.
// Left recursion (a rule reaching a call to itself before consuming a byte) is
// rejected at build time, which keeps every closure finite.
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "structured/grammar.h"

namespace lmrun::structured {

struct PdaCall {
    int32_t rule;          // automaton rule to run
    int32_t return_state;  // where the caller continues once it finishes
};

struct AutomatonLimits {
    int64_t max_nfa_states = 4'000'000;  // after expanding repetitions and inlining
    int64_t max_dfa_states = 400'000;
    // NFA states above which a rule or repetition body is called, not copied. Copies cost states
    // (one trie walk each, fast); calls cost walks that leave the rule at every repetition.
    int64_t inline_limit = 6000;
};

class PushdownAutomaton {
  public:
    static constexpr uint8_t kFinal = 1;  // the rule may end here
    static constexpr uint8_t kScans = 2;  // some byte moves on from here
    static constexpr uint8_t kCalls = 4;  // calls leave from here

    // Errors: InvalidArgument (matches nothing, left recursion), ResourceExhausted (too large).
    static Result<PushdownAutomaton> build(const Grammar& grammar, const AutomatonLimits& limits = {});

    int32_t num_states() const { return int32_t(state_flags_.size()); }
    int32_t num_rules() const { return int32_t(rule_start_.size()); }
    int32_t num_byte_classes() const { return num_byte_classes_; }
    // Next state on `byte`, or -1.
    int32_t next(int32_t state, uint8_t byte) const {
        const int32_t value = transitions_[size_t(state) * size_t(num_byte_classes_) + byte_class_[byte]];
        return value < 0 ? -1 : value & kStateMask;
    }
    // The same, for the trie walk's fast path: the next state if it only scans (no
    // calls, not final), kNotPlain if it does more, kNoTransition if there is none.
    static constexpr int32_t kNotPlain = -2;
    static constexpr int32_t kNotPlainBit = 1 << 30;
    static constexpr int32_t kStateMask = kNotPlainBit - 1;
    static constexpr int32_t kNoTransition = INT32_MIN;
    int32_t next_plain(int32_t state, uint8_t byte) const {
        const int32_t value = transitions_[size_t(state) * size_t(num_byte_classes_) + byte_class_[byte]];
        return value & kNotPlainBit ? kNotPlain : value;
    }
    // Raw tables for hot loops: transition_table()[state * num_byte_classes() +
    // byte_class_table()[byte]] is next() before decoding (see kNotPlainBit).
    const int32_t* transition_table() const { return transitions_.data(); }
    const uint8_t* byte_class_table() const { return byte_class_.data(); }
    uint8_t flags(int32_t state) const { return state_flags_[size_t(state)]; }
    bool is_final(int32_t state) const { return flags(state) & kFinal; }
    std::span<const PdaCall> calls(int32_t state) const {
        return {calls_.data() + call_offsets_[size_t(state)],
                size_t(call_offsets_[size_t(state) + 1] - call_offsets_[size_t(state)])};
    }
    int32_t rule_of_state(int32_t state) const { return rule_of_state_[size_t(state)]; }
    int32_t rule_start(int32_t rule) const { return rule_start_[size_t(rule)]; }
    // Whether some call targets the rule (if not, its states are only ever at the stack bottom).
    bool rule_is_called(int32_t rule) const { return rule_is_called_[size_t(rule)]; }
    const std::string& rule_name(int32_t rule) const { return rule_names_[size_t(rule)]; }
    int32_t root_rule() const { return 0; }
    int32_t root_state() const { return rule_start(0); }

  private:
    friend class AutomatonBuilder;

    int32_t num_byte_classes_ = 1;
    std::array<uint8_t, 256> byte_class_{};
    // [num_states * num_byte_classes]: next state (| kNotPlainBit unless it only scans) or kNoTransition
    std::vector<int32_t> transitions_;
    std::vector<uint8_t> state_flags_;
    std::vector<int32_t> call_offsets_;  // [num_states + 1] into calls_
    std::vector<PdaCall> calls_;
    std::vector<int32_t> rule_of_state_;
    std::vector<int32_t> rule_start_;
    std::vector<uint8_t> rule_is_called_;
    std::vector<std::string> rule_names_;
};

}  // namespace lmrun::structured
