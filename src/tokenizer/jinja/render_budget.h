// Bounds on what rendering a template may cost. A chat template comes from a model
// repository and its inputs from requests: both are untrusted, so a render that would
// run too long, nest too deeply or build values or output too large stops with an error
// instead of exhausting the process.
//
// The Interpreter installs a RenderBudget for its thread while it renders. Expressions and
// statements spend steps; operations on Values (builtins, arithmetic, comparisons,
// formatting) spend steps per item they visit and bytes per byte they create, through the
// free functions below. Once the budget is exhausted every spend fails and stays failing:
// long loops inside operations stop early, and the interpreter returns the budget's reason
// as the render's error at its next check. Outside a render no budget is installed and
// only the per-value limits apply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace lmrun::jinja {

// No value a template builds (string, or the logical size of a list or dict counting what
// its items hold) may exceed this; values from the context (a request's messages) may.
inline constexpr uint64_t kMaxValueBytes = uint64_t(64) << 20;
// No list or dict a template builds may hold more items (range() stays at Jinja's 100000).
inline constexpr size_t kMaxListItems = size_t(1) << 20;

struct RenderLimits {
    int64_t max_steps = 20'000'000;              // expressions, statements, items visited
    int64_t max_bytes = int64_t(1) << 30;        // bytes of strings and list slots created
    size_t max_output_bytes = size_t(64) << 20;  // the rendered text
    int max_depth = 500;                         // nested evaluation (expressions, blocks, macro calls)
};

class RenderBudget {
  public:
    explicit RenderBudget(const RenderLimits& limits) : limits_(limits) {}

    // Each returns false once the budget is exhausted, and from then on.
    bool spend_steps(int64_t steps);
    bool spend_bytes(uint64_t bytes);
    // Marks the budget exhausted with `reason` (the first reason is kept).
    void exhaust(std::string reason);

    bool exhausted() const { return !reason_.empty(); }
    // Why the render stopped, e.g. "the template took more than 20000000 steps".
    const std::string& reason() const { return reason_; }
    const RenderLimits& limits() const { return limits_; }

  private:
    RenderLimits limits_;
    int64_t steps_ = 0;
    uint64_t bytes_ = 0;
    std::string reason_;
};

// The budget of the render running on this thread, or nullptr.
RenderBudget* current_budget();

// Installs `budget` as this thread's current budget for its lifetime.
class ScopedRenderBudget {
  public:
    explicit ScopedRenderBudget(RenderBudget& budget);
    ~ScopedRenderBudget();
    ScopedRenderBudget(const ScopedRenderBudget&) = delete;
    ScopedRenderBudget& operator=(const ScopedRenderBudget&) = delete;

  private:
    RenderBudget* previous_;
};

// Spend on the current budget; true when none is installed.
bool spend_steps(int64_t steps);
bool spend_bytes(uint64_t bytes);
// Whether the current budget (if any) is exhausted.
bool budget_exhausted();

// Before building a value of `bytes` (logical size): an error naming `what` when it would
// exceed kMaxValueBytes, e.g. "replace() result is too large (more than 268435456 bytes)".
Status check_value_bytes(uint64_t bytes, std::string_view what);
// Before building a list or dict of `items` entries.
Status check_list_items(uint64_t items, std::string_view what);

// a + b and a * b, saturating at UINT64_MAX (logical sizes of shared, nested lists can
// exceed 64 bits).
inline uint64_t saturating_add(uint64_t a, uint64_t b) {
    uint64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}
inline uint64_t saturating_mul(uint64_t a, uint64_t b) {
    uint64_t product = 0;
    return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

}  // namespace lmrun::jinja
