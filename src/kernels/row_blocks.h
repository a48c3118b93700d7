// Internal: how the GEMM kernels split a call's rows into micro-tile row blocks. There are
// ceil(rows / max_rows) blocks either way; near-equal blocks (sizes differ by at most one) instead
// of full ones and a short remainder, because a short block has too few accumulators to cover the
// dot-product instruction's latency: 20 rows as 5+5+5+5 rather than 6+6+6+2.
#pragma once

#include <cstdint>

namespace lmrun::kernels {

struct RowBlocks {
    int64_t num_rows, max_rows, count;
    bool balanced;  // near-equal blocks; else full ones and the remainder last

    // Near-equal from `balance_from` blocks on (the int8 driver keeps two blocks as 6 + rest).
    RowBlocks(int64_t num_rows, int64_t max_rows, int64_t balance_from = 1)
        : num_rows(num_rows),
          max_rows(max_rows),
          count((num_rows + max_rows - 1) / max_rows),
          balanced(count >= balance_from) {}

    // Rows of block b; blocks [0, b) cover the rows before first_row(b).
    int64_t rows(int64_t b) const {
        if (!balanced) return num_rows - b * max_rows < max_rows ? num_rows - b * max_rows : max_rows;
        return num_rows / count + (b < num_rows % count ? 1 : 0);
    }
    int64_t first_row(int64_t b) const {
        if (!balanced) return b * max_rows;
        return b * (num_rows / count) + (b < num_rows % count ? b : num_rows % count);
    }
};

}  // namespace lmrun::kernels
