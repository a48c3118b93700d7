// Counts heap allocations made anywhere in the process (any thread, any library:
// malloc-level interposition over glibc's allocator) while counting is switched
// on. Used to prove that a decode step allocates nothing. Sanitizer builds bring
// their own allocator, so there the interposition is left out (and so are the
// tests that need it, see allocation_free_test.cpp).
#include "allocation_counter_util.h"

#include <atomic>
#include <cerrno>
#include <cstddef>

namespace lmrun::testing {
namespace {
std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};
}  // namespace

void start_counting_allocations() {
    allocations.store(0);
    counting.store(true);
}

int64_t stop_counting_allocations() {
    counting.store(false);
    return allocations.load();
}

void note_allocation() {
    if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace lmrun::testing

#if LMRUN_COUNT_ALLOCATIONS
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);

void* malloc(size_t size) {
    lmrun::testing::note_allocation();
    return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
    lmrun::testing::note_allocation();
    return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
    lmrun::testing::note_allocation();
    return __libc_realloc(pointer, size);
}
void* memalign(size_t alignment, size_t size) {
    lmrun::testing::note_allocation();
    return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
    lmrun::testing::note_allocation();
    return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
    lmrun::testing::note_allocation();
    void* pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *out = pointer;
    return 0;
}
}
#endif
