// Per-thread working memory of the kernels: a buffer that grows to the largest size asked for and
// is then reused, so that a warmed-up step allocates nothing (AllocationFree tests).
#pragma once

#include <cstddef>
#include <vector>

namespace lmrun::kernels {

// The calling thread's buffer for the use `Tag` names (a type of its own per use, so that two
// uses never share one), at least `count` elements long; contents are whatever the last use left.
template <typename Tag, typename T>
std::vector<T>& thread_buffer(size_t count) {
    thread_local std::vector<T> buffer;
    if (buffer.size() < count) buffer.resize(count);
    return buffer;
}

}  // namespace lmrun::kernels
