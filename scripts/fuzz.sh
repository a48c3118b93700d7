#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang-16 with ASan + UBSan, in build-fuzz) and
# runs each for a fixed time of one core, as many at once as there are cores, then prints per
# target the corpus size, executions per second and crashes found.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 600 s, every target)
#        scripts/fuzz.sh 10                                  (what scripts/test.sh runs in CI)
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

# One run of a target for $2 seconds ($3 numbers the runs of one target). Targets run side by
# side, so they report through files: the log $build/fuzz-$target.$3.log, and a failure
# leaves $build/fuzz-$target.failed.
fuzz_run() {
    local target=$1 run_seconds=$2 run=$3
    local corpus="$build/fuzz-corpus/$target"
    local crashes="$build/fuzz-crashes/$target"
    local log="$build/fuzz-$target.$run.log"
    mkdir -p "$corpus" "$crashes"
    local inputs=("$corpus" "$build/fuzz-seeds/$target")
    [ -d "tests/fuzz/seeds/$target" ] && inputs+=("tests/fuzz/seeds/$target")
    local options=()
    [ -f "tests/fuzz/$target.dict" ] && options+=("-dict=tests/fuzz/$target.dict")
    echo "fuzz: $target for ${run_seconds}s"
    # -timeout: one input running 25 s is a hang; -rss_limit_mb: and 2 GB is a memory bomb.
    local status=0
    nice "$build/$target" -max_total_time="$run_seconds" -timeout=25 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" "${options[@]}" "${inputs[@]}" >"$log" 2>&1 ||
        status=$?
    if [ "$status" -ne 0 ]; then
        touch "$build/fuzz-$target.failed"
        echo "fuzz: $target FAILED (exit $status); log: $log"
        grep -m 20 -E 'ERROR|SUMMARY|property violated|Test unit written' "$log" || true
    fi
}

# Each target gets $seconds of one core (libFuzzer runs one process). The targets are laid end
# to end on as many lanes as there are cores, all of one length; a target that does not fit at
# the end of a lane goes on at the start of the next, on the same corpus (the two runs cannot
# overlap: a lane is at least $seconds long). On 2 cores, 5 targets x 30 s take 75 s, where
# rounds of 2 took 90 s with one core idle for the last 30.
lanes=$(nproc)
if ((lanes > ${#targets[@]})); then lanes=${#targets[@]}; fi
lane_seconds=$(((${#targets[@]} * seconds + lanes - 1) / lanes))
lane_runs=()
lane=0 lane_left=$lane_seconds
for target in "${targets[@]}"; do
    rm -f "$build/fuzz-$target".*
    left=$seconds run=0
    while ((left > 0)); do
        run_seconds=$((left < lane_left ? left : lane_left))
        lane_runs[lane]+="$target $run_seconds $run "
        left=$((left - run_seconds)) lane_left=$((lane_left - run_seconds)) run=$((run + 1))
        if ((lane_left == 0)); then lane=$((lane + 1)) lane_left=$lane_seconds; fi
    done
done
for runs in "${lane_runs[@]}"; do
    (
        read -r -a run <<<"$runs"
        for ((i = 0; i < ${#run[@]}; i += 3)); do fuzz_run "${run[i]}" "${run[i + 1]}" "${run[i + 2]}"; done
    ) &
done
wait

# Per target: corpus size, executions, crashes.
summarize() {
    local target=$1
    local corpus="$build/fuzz-corpus/$target"
    local crashes="$build/fuzz-crashes/$target"
    local execs files bytes found slow
    execs=$(cat "$build/fuzz-$target".*.log | grep -o 'stat::number_of_executed_units: *[0-9]*' |
        awk '{n += $2} END {print n + 0}')
    files=$(find "$corpus" -type f | wc -l)
    bytes=$(du -sb "$corpus" | awk '{print $1}')
    # slow-unit-* files are inputs that took > 10 s of wall time: on cores shared with other
    # builds that is noise, so they are listed, not failures; a real hang is a timeout-* (25 s).
    found=$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)
    slow=$(find "$crashes" -type f -name 'slow-unit-*' | wc -l)
    if [ "$slow" -ne 0 ]; then echo "fuzz: $target: $slow slow inputs (> 10 s wall) in $crashes" >&2; fi
    if [ "$found" -ne 0 ]; then
        touch "$build/fuzz-$target.failed"
        echo "fuzz: $target FAILED ($found crashing inputs in $crashes)" >&2
    fi
    printf '%-18s %8s files %10s bytes %12s execs %8s exec/s %4s crashes\n' \
        "$target" "$files" "$bytes" "$execs" "$((execs / seconds))" "$found"
}

failed=0
summary=()
for target in "${targets[@]}"; do
    summary+=("$(summarize "$target")")
    [ -f "$build/fuzz-$target.failed" ] && failed=1
done
echo
echo "fuzz summary (${seconds}s per target):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
