// Internal to the kernels: min/max for code compiled with ISA-specific flags. std::min/max
// are templates, and a std:: instantiation compiled with AVX-512 flags is a shared (COMDAT)
// symbol the linker could hand to AVX2 callers; these sit in an anonymous namespace, so every
// translation unit keeps its own.
#pragma once

#include <math.h>

#include <cstdint>

namespace lmrun::kernels {
namespace {

inline int64_t min_i64(int64_t a, int64_t b) {
    return a < b ? a : b;
}
inline int64_t max_i64(int64_t a, int64_t b) {
    return a > b ? a : b;
}
inline float max_f32(float a, float b) {
    return a > b ? a : b;
}

// Online softmax: the factor for a row's output and sum so far when its running max goes from
// m_old to m_new; 0 while the row has seen no key (m_old = -inf), so that its zeros stay zeros.
// Once the max has settled most chunks leave it unchanged: no scalar exp call then (exp(0) = 1).
inline float softmax_correction(float m_old, float m_new) {
    return m_old == -INFINITY ? 0.0f : m_new == m_old ? 1.0f : expf(m_old - m_new);
}

}  // namespace
}  // namespace lmrun::kernels
