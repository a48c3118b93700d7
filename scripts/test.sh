#!/usr/bin/env bash
# The CI run (what .ci/run calls), in stages, each timed:
#   deps      scripts/install_deps.sh test
#   format    clang-format-16 --dry-run --Werror on every tracked C++ file
#   build     one Release tree (build/): the library, lmrun, the tools and the unit tests
#             (src/ in unity batches: LMRUN_UNITY_BUILD)
#   test      every CTest test of that tree (unit tests, ISA-capped goldens, the Node server suite)
#   lint      clang-tidy-16 over src/ (.clang-tidy), in unity batches (scripts/run_clang_tidy.sh)
#   sanitize  the unit tests that exercise memory, built with AddressSanitizer + UBSan (build-asan/;
#             which tests, and why: CMakeLists.txt, LMRUN_SANITIZE_TEST_SOURCES)
#   fuzz      every libFuzzer target for 10 s under ASan/UBSan (scripts/fuzz.sh, build-fuzz/; a
#             smoke run on every change: scripts/fuzz.sh 600 is the long one)
# Usage: scripts/test.sh                 every stage
#        scripts/test.sh build test      only these stages (deps always runs first)
#        LMRUN_SKIP_SANITIZERS=1 scripts/test.sh   every stage but sanitize
#        LMRUN_SKIP_FUZZ=1 scripts/test.sh         every stage but fuzz
#        LMRUN_FUZZ_SECONDS=90 scripts/test.sh     longer fuzz runs
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
# Tests run side by side on few cores: threads that wait must sleep, not spin, or one
# process's spinning team starves the other's.
export OMP_WAIT_POLICY=passive

stage_deps() { bash scripts/install_deps.sh test; }

# Compiles go through ccache when it is there: a machine that ran CI before (a CI runner keeping
# its cache, a developer) recompiles only what changed, whatever folder the checkout is in
# (CCACHE_BASEDIR makes the cached commands relative to it). The first run on a machine compiles
# everything, a few percent slower than without ccache.
compiler_launcher=()
if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR="$PWD"
    compiler_launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

stage_format() { bash scripts/check_format.sh; }

stage_build() {
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMRUN_BUILD_TESTS=ON -DLMRUN_UNITY_BUILD=ON \
        "${compiler_launcher[@]}" >/dev/null
    cmake --build build -j "$jobs"
}

stage_test() { ctest --test-dir build --output-on-failure -j "$jobs"; }

stage_lint() { bash scripts/run_clang_tidy.sh; }

stage_sanitize() {
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMRUN_SANITIZE=ON \
        -DLMRUN_BUILD_TESTS=ON -DLMRUN_UNITY_BUILD=ON "${compiler_launcher[@]}" >/dev/null
    cmake --build build-asan -j "$jobs" --target lmrun_sanitize_tests
    # libgomp's thread pool is intentionally kept until exit; it is not our leak.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    LSAN_OPTIONS=suppressions="$PWD/scripts/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan --output-on-failure -j "$jobs" -L sanitize
}

# Each target for a fixed time; a crash fails the run and leaves the input in
# build-fuzz/fuzz-crashes/<target>/.
stage_fuzz() { bash scripts/fuzz.sh "${LMRUN_FUZZ_SECONDS:-10}"; }

stages=("$@")
if ((${#stages[@]} == 0)); then
    stages=(format build test lint)
    if [ "${LMRUN_SKIP_SANITIZERS:-0}" != 1 ]; then stages+=(sanitize); fi
    if [ "${LMRUN_SKIP_FUZZ:-0}" != 1 ]; then stages+=(fuzz); fi
fi

timings=()
run_stage() {
    local name=$1 start=$SECONDS
    echo "== $name"
    "stage_$name"
    timings+=("$name $((SECONDS - start)) s")
}
run_stage deps
for stage in "${stages[@]}"; do
    if ! declare -F "stage_$stage" >/dev/null; then
        echo "test.sh: unknown stage '$stage'" >&2
        exit 2
    fi
    run_stage "$stage"
done
echo "== done: ${timings[*]/%/;}"
