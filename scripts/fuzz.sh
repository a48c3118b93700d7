#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang-16 with ASan + UBSan, in build-fuzz) and
# runs each for a fixed time, as many at once as there are cores, then prints per target the corpus size,
# executions per second and crashes found.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 600 s, every target)
#        scripts/fuzz.sh 60                                  (what scripts/test.sh runs in CI)
# The corpus grows across runs in build-fuzz/fuzz-corpus/<target>; seeds are generated from
# ../shared/testdata (build-fuzz/fuzz-seeds) plus tests/fuzz/seeds/<target>.
# Crashing inputs land in build-fuzz/fuzz-crashes/<target>/; the script then exits 1.
# Each becomes a regression test in the normal suite and a seed in tests/fuzz/seeds/.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-600}"
shift || true
build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -S . -B "$build" -G Ninja -DLMRUN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-16 \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
fi
nice cmake --build "$build" -j "$(nproc)"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for source in tests/fuzz/*_fuzz.cpp; do targets+=("$(basename "$source" .cpp)"); done
fi

# The seeds (~1 s to write) are written again only when make_fuzz_seeds changed.
if [ ! -f "$build/fuzz-seeds/.written" ] || [ "$build/make_fuzz_seeds" -nt "$build/fuzz-seeds/.written" ]; then
    rm -rf "$build/fuzz-seeds"
    "$build/make_fuzz_seeds" "$build/fuzz-seeds" >/dev/null
    touch "$build/fuzz-seeds/.written"
fi

# One target: its summary line goes to $build/fuzz-$target.summary, and a failure leaves
# $build/fuzz-$target.failed (targets run side by side, so they report through files).
fuzz_one() {
    local target=$1
    local corpus="$build/fuzz-corpus/$target"
    local crashes="$build/fuzz-crashes/$target"
    local log="$build/fuzz-$target.log"
    rm -f "$build/fuzz-$target.failed"
    mkdir -p "$corpus" "$crashes"
    local inputs=("$corpus" "$build/fuzz-seeds/$target")
    [ -d "tests/fuzz/seeds/$target" ] && inputs+=("tests/fuzz/seeds/$target")
    local options=()
    [ -f "tests/fuzz/$target.dict" ] && options+=("-dict=tests/fuzz/$target.dict")
    echo "fuzz: $target for ${seconds}s"
    # -timeout: one input running 25 s is a hang; -rss_limit_mb: and 2 GB is a memory bomb.
    local status=0
    nice "$build/$target" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" "${options[@]}" "${inputs[@]}" >"$log" 2>&1 ||
        status=$?
    local execs rate files bytes found slow
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}' | tail -1)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{print $2}' | tail -1)
    files=$(find "$corpus" -type f | wc -l)
    bytes=$(du -sb "$corpus" | awk '{print $1}')
    # slow-unit-* files are inputs that took > 10 s of wall time: on cores shared with other
    # builds that is noise, so they are listed, not failures; a real hang is a timeout-* (25 s).
    found=$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)
    slow=$(find "$crashes" -type f -name 'slow-unit-*' | wc -l)
    if [ "$slow" -ne 0 ]; then echo "fuzz: $target: $slow slow inputs (> 10 s wall) in $crashes"; fi
    if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
        touch "$build/fuzz-$target.failed"
        echo "fuzz: $target FAILED (exit $status, $found crashing inputs in $crashes); log: $log"
        grep -m 20 -E 'ERROR|SUMMARY|property violated|Test unit written' "$log" || true
    fi
    printf '%-18s %8s files %10s bytes %12s execs %8s exec/s %4s crashes\n' \
        "$target" "$files" "$bytes" "${execs:-?}" "${rate:-?}" "$found" >"$build/fuzz-$target.summary"
}

# libFuzzer runs one process on one core: as many targets at once as there are cores.
jobs=$(nproc)
running=0
for target in "${targets[@]}"; do
    fuzz_one "$target" &
    running=$((running + 1))
    if ((running >= jobs)); then
        wait -n || true
        running=$((running - 1))
    fi
done
wait

failed=0
summary=()
for target in "${targets[@]}"; do
    summary+=("$(cat "$build/fuzz-$target.summary" 2>/dev/null || echo "$target: no summary")")
    [ -f "$build/fuzz-$target.failed" ] && failed=1
done
echo
echo "fuzz summary (${seconds}s per target):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
