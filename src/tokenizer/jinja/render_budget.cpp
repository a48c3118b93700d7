#include "tokenizer/jinja/render_budget.h"

namespace lmrun::jinja {
namespace {

thread_local RenderBudget* current = nullptr;

}  // namespace

bool RenderBudget::spend_steps(int64_t steps) {
    if (exhausted()) return false;
    steps_ += steps;
    if (steps_ <= limits_.max_steps) return true;
    exhaust(fmt::format("the template took more than {} steps", limits_.max_steps));
    return false;
}

bool RenderBudget::spend_bytes(uint64_t bytes) {
    if (exhausted()) return false;
    bytes_ = saturating_add(bytes_, bytes);
    if (bytes_ <= uint64_t(limits_.max_bytes)) return true;
    exhaust(fmt::format("the template created more than {} bytes of values", limits_.max_bytes));
    return false;
}

void RenderBudget::exhaust(std::string reason) {
    if (reason_.empty()) reason_ = std::move(reason);
}

RenderBudget* current_budget() {
    return current;
}

ScopedRenderBudget::ScopedRenderBudget(RenderBudget& budget) : previous_(current) {
    current = &budget;
}

ScopedRenderBudget::~ScopedRenderBudget() {
    current = previous_;
}

bool spend_steps(int64_t steps) {
    return current == nullptr || current->spend_steps(steps);
}

bool spend_bytes(uint64_t bytes) {
    return current == nullptr || current->spend_bytes(bytes);
}

bool budget_exhausted() {
    return current != nullptr && current->exhausted();
}

Status check_value_bytes(uint64_t bytes, std::string_view what) {
    if (bytes > kMaxValueBytes)
        return make_error(ErrorKind::ResourceExhausted, "{} is too large (more than {} bytes)", what,
                          kMaxValueBytes);
    return ok_status();
}

Status check_list_items(uint64_t items, std::string_view what) {
    if (items > kMaxListItems)
        return make_error(ErrorKind::ResourceExhausted, "{} is too large (more than {} items)", what,
                          kMaxListItems);
    return ok_status();
}

}  // namespace lmrun::jinja
