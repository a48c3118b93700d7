#!/usr/bin/env bash
# Installs dependencies, builds lmrun (Release) and runs the whole test suite,
# then builds the unit tests with AddressSanitizer + UBSan and runs them again (all but the
# timing-based Node integration suite of the HTTP server, which runs in the Release pass),
# then runs every libFuzzer target for 60 s under ASan/UBSan (scripts/fuzz.sh).
# Usage: scripts/test.sh            (everything; what .ci/run calls)
#        LMRUN_SKIP_SANITIZERS=1 scripts/test.sh   (Release only, for quick local runs)
#        LMRUN_SKIP_FUZZ=1 scripts/test.sh         (everything but the fuzz job)
#        LMRUN_FUZZ_SECONDS=90 scripts/test.sh     (longer fuzz runs)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh

jobs=$(nproc)
# Tests run side by side on few cores: threads that wait must sleep, not spin, or one
# process's spinning team starves the other's.
export OMP_WAIT_POLICY=passive
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

if [ "${LMRUN_SKIP_SANITIZERS:-0}" != 1 ]; then
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMRUN_SANITIZE=ON >/dev/null
    cmake --build build-asan -j "$jobs" --target lmrun_tests lmrun
    # libgomp's thread pool is intentionally kept until exit; it is not our leak.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    LSAN_OPTIONS=suppressions="$PWD/scripts/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan --output-on-failure -j "$jobs" -E server_integration
fi

if [ "${LMRUN_SKIP_FUZZ:-0}" != 1 ]; then
    # Each target for a fixed time (5 targets x 60 s); a crash fails the run and leaves the
    # input in build-fuzz/fuzz-crashes/<target>/.
    bash scripts/fuzz.sh "${LMRUN_FUZZ_SECONDS:-60}"
fi
