// Internal: <immintrin.h> for the translation units built with AVX-512 (and AMX) flags. Included
// first, before any header that could bring in <immintrin.h>: GCC 12 reports the
// _mm512_undefined_*() inside its own intrinsics (the lane reductions, shuffles and converts;
// at -Og, as in the sanitizer build, also the ones it inlines) as uninitialized, and a pragma
// only covers what comes after it in the translation unit.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>  // IWYU pragma: export
