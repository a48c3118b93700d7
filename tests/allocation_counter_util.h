// Process-wide heap allocation counting for tests (see allocation_counter_util.cpp).
#pragma once

#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define LMRUN_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LMRUN_COUNT_ALLOCATIONS 0
#else
#define LMRUN_COUNT_ALLOCATIONS 1
#endif
#else
#define LMRUN_COUNT_ALLOCATIONS 1
#endif

namespace lmrun::testing {

void start_counting_allocations();
int64_t stop_counting_allocations();  // allocations since start
void note_allocation();

}  // namespace lmrun::testing
