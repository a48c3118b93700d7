#!/usr/bin/env bash
# clang-tidy-16 with the checks of .clang-tidy over every source file in src/ (headers under
# src/ are checked through the sources that include them). Any finding fails (WarningsAsErrors
# in .clang-tidy).
#
# The sources are checked as the unity batches of a build tree configured for it (build-lint/,
# LMRUN_UNITY_BUILD with the kernels batched too, LMRUN_UNITY_KERNELS; configured only: nothing
# is compiled). Most of a file's cost is parsing and
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
    -DLMRUN_BUILD_PYTHON=OFF -DLMRUN_PCH=OFF -DLMRUN_UNITY_BUILD=ON -DLMRUN_UNITY_KERNELS=ON >/dev/null
# What to check, from the compile database: the unity batches of src/ and the files compiled
# alone (the AVX-512 and AMX kernels), the longest first, so that no long one is left to run
# alone at the end (run-clang-tidy takes them in a random order). The CLI's first batch takes
# 45 s, a third of the stage on 2 cores: it includes CLI11, whose templates cost
# performance-unnecessary-value-param 25 s; the library's batches take 10-20 s, the kernels
# compiled alone 1-4 s each.
mapfile -t files < <(python3 - "$PWD" "$build" <<'PYTHON'
import json, re, sys
root, build = sys.argv[1], sys.argv[2]
database = f"{root}/{build}/compile_commands.json"
checked = re.compile(re.escape(root) + "/(src|" + re.escape(build) + r"/CMakeFiles/lmrun(_lib)?\.dir/Unity)/")
files = [entry["file"] for entry in json.load(open(database)) if checked.match(entry["file"])]
order = lambda f: (0 if "/lmrun.dir/Unity/" in f else 1 if "/Unity/" in f else 2, f)
print("\n".join(sorted(files, key=order)))
PYTHON
)
if ((${#files[@]} < 20)); then
    echo "run_clang_tidy.sh: only ${#files[@]} files to check in $build/compile_commands.json" >&2
    exit 1
fi
# One clang-tidy per file, as many at once as there are cores; each prints its findings at once.
# The unity sources are generated files that #include the real ones: bugprone-suspicious-include
# would flag exactly that. The AVX-512 files silence a GCC-only warning (-Wmaybe-uninitialized)
# that clang does not know. xargs exits non-zero if any file has a finding.
tidy() {
    local output status=0
    output=$(clang-tidy-16 -p "$build" -quiet -checks=-bugprone-suspicious-include \
        -extra-arg=-Wno-unknown-warning-option "$1" 2>&1) || status=$?
    printf 'clang-tidy %s\n%s\n' "$1" "$output"
    return "$status"
}
export -f tidy
export build
printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$(nproc)" bash -c 'tidy "$1"' tidy
