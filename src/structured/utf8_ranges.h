// Code point ranges as UTF-8 byte patterns: a range of code points becomes a
// few sequences of byte ranges, each sequence matching exactly the encodings of
// a sub-range (the split RE2 and Rust's regex-syntax use). A byte-level
// automaton then matches a character class without decoding UTF-8.
// Example: [U+0080, U+07FF] -> one sequence [C2-DF][80-BF].
#pragma once

#include <cstdint>
#include <vector>

#include "structured/grammar.h"

namespace lmrun::structured {

struct ByteRange {
    uint8_t first;
    uint8_t last;
};

using Utf8Sequence = std::vector<ByteRange>;  // 1 to 4 byte ranges

// Sequences whose union is exactly the UTF-8 encodings of the code points in
// `range` (surrogates must already be excluded). Sequences are disjoint.
std::vector<Utf8Sequence> utf8_sequences(CodepointRange range);

}  // namespace lmrun::structured
