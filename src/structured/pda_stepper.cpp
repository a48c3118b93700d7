#include "structured/pda_stepper.h"

#include <algorithm>

namespace lmrun::structured {
namespace {

// Equal stacks, looking one frame below the top: fresh pushes of the same return
// state onto the same parent are the same stack even though their nodes differ.
bool same_stack(const StackArena& arena, StackConfig a, StackConfig b) {
    if (a.state != b.state) return false;
    if (a.parent == b.parent) return true;
    if (a.parent < 0 || b.parent < 0) return false;
    const StackFrame& fa = arena.frame(a.parent);
    const StackFrame& fb = arena.frame(b.parent);
    return fa.state == fb.state && fa.parent == fb.parent;
}

bool contains(const StackArena& arena, const std::vector<StackConfig>& set, StackConfig config) {
    return std::any_of(set.begin(), set.end(), [&](StackConfig c) { return same_stack(arena, c, config); });
}

}  // namespace

bool PdaStepper::visit(StackArena& arena, StackConfig config, std::vector<StackConfig>& out) {
    const PushdownAutomaton& pda = *pda_;
    bool reached_end = false;
    pending_.clear();
    pending_.push_back(config);
    while (!pending_.empty()) {
        const StackConfig c = pending_.back();
        pending_.pop_back();
        const uint8_t flags = pda.flags(c.state);
        if (flags & PushdownAutomaton::kScans) {
            if (contains(arena, out, c)) continue;
            out.push_back(c);
        } else {
            if (contains(arena, visited_, c)) continue;
            visited_.push_back(c);
        }
        if (flags & PushdownAutomaton::kCalls) {
            for (const PdaCall& call : pda.calls(c.state)) {
                const int32_t node = arena.push(call.return_state, c.parent);
                pending_.push_back({pda.rule_start(call.rule), node});
            }
        }
        if (flags & PushdownAutomaton::kFinal) {
            if (c.parent < 0) {
                reached_end = true;
            } else {
                const StackFrame& frame = arena.frame(c.parent);
                pending_.push_back({frame.state, frame.parent});
            }
        }
    }
    return reached_end;
}

bool PdaStepper::close(StackArena& arena, StackConfig config, std::vector<StackConfig>& out) {
    visited_.clear();
    return visit(arena, config, out);
}

StepResult PdaStepper::advance(StackArena& arena, const std::vector<StackConfig>& in, uint8_t byte,
                               std::vector<StackConfig>& out) {
    StepResult result;
    out.clear();
    visited_.clear();
    for (const StackConfig& c : in) {
        const int32_t next = pda_->next(c.state, byte);
        if (next < 0) continue;
        result.moved = true;
        if (visit(arena, {next, c.parent}, out)) result.reached_end = true;
    }
    return result;
}

}  // namespace lmrun::structured
