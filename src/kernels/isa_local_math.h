// Internal to the kernels: min/max for code compiled with ISA-specific flags. std::min/max
// are templates, and a std:: instantiation compiled with AVX-512 flags is a shared (COMDAT)
// symbol the linker could hand to AVX2 callers; these sit in an anonymous namespace, so every
// translation unit keeps its own.
#pragma once

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

}  // namespace
}  // namespace lmrun::kernels
