#include "parallel/single_process_group.h"

#include <algorithm>
#include <cstring>

namespace lmrun::parallel {

void SingleProcessGroup::gather(const void* local, size_t bytes, void* out) {
    if (out != local) std::memmove(out, local, bytes);
}

void SingleProcessGroup::gather_columns(const float* local, int64_t num_rows, int64_t local_cols, float* out,
                                        int64_t out_cols) {
    const int64_t cols = std::min(local_cols, out_cols);
    for (int64_t row = 0; row < num_rows; ++row)
        std::memmove(out + row * out_cols, local + row * local_cols, size_t(cols) * sizeof(float));
}

ProcessGroup& single_process_group() {
    static SingleProcessGroup group;
    return group;
}

}  // namespace lmrun::parallel
