// Internal to the kernels: a run-time value as a compile-time constant, the one dispatch helper
// that turns head_dim (or another hot parameter) into a template argument (FlashInfer's
// DISPATCH_HEAD_DIM, as a function instead of a macro). Anonymous namespace: instantiated with
// each translation unit's own ISA flags.
#pragma once

#include <cstdint>
#include <type_traits>

namespace lmrun::kernels {
namespace {

// Calls fn(std::integral_constant<int64_t, V>{}) for the V in kValues equal to `value` and
// returns true; returns false when none is.
template <int64_t... kValues, typename Fn>
bool dispatch_constant(int64_t value, Fn&& fn) {
    return ((value == kValues && (fn(std::integral_constant<int64_t, kValues>{}), true)) || ...);
}

}  // namespace
}  // namespace lmrun::kernels
