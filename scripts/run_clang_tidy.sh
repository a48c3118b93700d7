#!/usr/bin/env bash
# clang-tidy-16 with the checks of .clang-tidy over every source file in src/ (headers under
# src/ are checked through the sources that include them). Any finding fails (WarningsAsErrors
# in .clang-tidy).
#
# The sources are checked as the unity batches of a build tree configured for it (build-lint/,
# LMRUN_UNITY_BUILD, configured only: nothing is compiled). Most of a file's cost is parsing and
# matching the standard library, nlohmann/json and fmt it includes, which a batch of 16 files
# does once: the whole of src/ takes a fifth of the time it takes file by file. Findings name
# the source file and line as usual. A unity batch also fails on two files of src/ that define
# the same name at namespace scope (even in anonymous namespaces): give each its own name, or
# make the two one helper if they do the same thing.
# Usage: scripts/run_clang_tidy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-lint
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMRUN_BUILD_TESTS=OFF \
    -DLMRUN_BUILD_PYTHON=OFF -DLMRUN_PCH=OFF -DLMRUN_UNITY_BUILD=ON >/dev/null
# The unity sources are generated files that #include the real ones: bugprone-suspicious-include
# would flag exactly that. The AVX-512 files silence a GCC-only warning (-Wmaybe-uninitialized)
# that clang does not know.
run-clang-tidy-16 -clang-tidy-binary clang-tidy-16 -p "$build" -j "$(nproc)" -quiet \
    -checks=-bugprone-suspicious-include -extra-arg=-Wno-unknown-warning-option \
    "$PWD/(src|$build/CMakeFiles/lmrun(_lib)?\.dir/Unity)/"
