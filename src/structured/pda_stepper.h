// Running a PushdownAutomaton over bytes. A parse position is a set of
// configurations; a configuration is a stack whose top is held inline
// (state, parent) and whose lower frames, the return states of open calls, are
// nodes of a StackArena linked by parent index (-1 = the bottom). Stacks share
// their lower frames, so a set of parse alternatives costs little more than one.
//
// After every byte the set is *closed*: calls from a state are entered (the
// return state is pushed), and a final state pops back to its caller. The closed
// set keeps only configurations that can scan a byte; popping the bottom frame
// is reported separately (the grammar, or the rule a token-mask walk started
// in, is complete there). Configurations are deduplicated by (state, parent).
#pragma once

#include <cstdint>
#include <vector>

#include "structured/pushdown_automaton.h"

namespace lmrun::structured {

struct StackConfig {
    int32_t state;
    int32_t parent;  // arena node of the frame below, -1 = none
    bool operator==(const StackConfig&) const = default;
};

struct StackFrame {
    int32_t state;  // return state
    int32_t parent;
};

class StackArena {
  public:
    int32_t push(int32_t state, int32_t parent) {
        frames_.push_back({state, parent});
        return int32_t(frames_.size() - 1);
    }
    const StackFrame& frame(int32_t id) const { return frames_[size_t(id)]; }
    size_t size() const { return frames_.size(); }
    void truncate(size_t size) { frames_.resize(size); }
    void clear() { frames_.clear(); }
    void reserve(size_t size) { frames_.reserve(size); }

  private:
    std::vector<StackFrame> frames_;
};

struct StepResult {
    bool moved = false;        // some configuration consumed the byte
    bool reached_end = false;  // after it, some configuration popped its bottom frame
};

class PdaStepper {
  public:
    explicit PdaStepper(const PushdownAutomaton& pda) : pda_(&pda) {}

    // Adds the closure of `config` to `out` (scanning configurations only).
    // Returns true if the closure pops the bottom frame.
    bool close(StackArena& arena, StackConfig config, std::vector<StackConfig>& out);
    // out = closure of every configuration of `in` moved by `byte`.
    StepResult advance(StackArena& arena, const std::vector<StackConfig>& in, uint8_t byte,
                       std::vector<StackConfig>& out);

    const PushdownAutomaton& pda() const { return *pda_; }

  private:
    bool visit(StackArena& arena, StackConfig config, std::vector<StackConfig>& out);

    const PushdownAutomaton* pda_;
    std::vector<StackConfig> visited_;  // this closure's non-scanning configurations
    std::vector<StackConfig> pending_;
};

}  // namespace lmrun::structured
