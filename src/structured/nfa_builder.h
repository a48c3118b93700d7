// Thompson construction from a Grammar to one byte-level NFA per automaton
// rule, the first step of PushdownAutomaton::build. Decides which grammar rules
// stay rules (the root, recursive rules, rules too large to copy) and which are
// inlined; bounded repetitions are expanded into copies unless the copies would
// exceed the inline limit, in which case the repeated item becomes a rule of
// its own. Internal to src/structured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "structured/grammar.h"
#include "structured/pushdown_automaton.h"

namespace lmrun::structured {

struct NfaEdge {
    enum class Kind : uint8_t { Byte, Call, Epsilon };
    Kind kind;
    uint8_t first = 0;  // Byte: inclusive byte range
    uint8_t last = 0;
    int32_t rule = -1;  // Call: automaton rule
    int32_t source;
    int32_t target;
};

struct RuleNfa {
    std::string name;
    int32_t num_states = 0;
    int32_t start = 0;
    int32_t accept = 1;
    std::vector<NfaEdge> edges;
    std::vector<std::string> excluded_words;  // see Rule::excluded_words
};

// Rule 0 of the result is the grammar's root.
Result<std::vector<RuleNfa>> build_rule_nfas(const Grammar& grammar, const AutomatonLimits& limits);

}  // namespace lmrun::structured
