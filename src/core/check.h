// LMRUN_CHECK guards internal invariants (a bug if it fires), never user input:
// user input goes through Result (result.h).
#pragma once

#include <cstdio>
#include <cstdlib>

#define LMRUN_CHECK(cond, ...)                                                                              \
    do {                                                                                                    \
        if (!(cond)) [[unlikely]] {                                                                         \
            std::fprintf(stderr, "lmrun: internal check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, "  " __VA_ARGS__);                                                         \
            std::fprintf(stderr, "\n");                                                                     \
            std::abort();                                                                                   \
        }                                                                                                   \
    } while (0)
