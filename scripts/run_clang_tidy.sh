#!/usr/bin/env bash
# clang-tidy-16 with the checks of .clang-tidy over every source file in src/ (headers under
# src/ are checked through the sources that include them), using the compile_commands.json of
# a configured build tree. Any finding fails (WarningsAsErrors in .clang-tidy).
# Usage: scripts/run_clang_tidy.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ ! -f "$build/compile_commands.json" ]; then
    echo "run_clang_tidy: no $build/compile_commands.json; configure the build first" >&2
    exit 2
fi
# The build precompiles headers with GCC (CMake's cmake_pch.hxx.gch); clang cannot read that
# file, so tidy gets the same commands without the precompiled-header include.
compile_db="$(mktemp -d)"
trap 'rm -rf "$compile_db"' EXIT
python3 - "$build/compile_commands.json" "$compile_db/compile_commands.json" <<'PY'
import json, re, sys
entries = []
for entry in json.load(open(sys.argv[1])):
    if entry["file"].endswith("cmake_pch.hxx.cxx"):
        continue
    command = re.sub(r"\s-include\s+\S*cmake_pch\.hxx\b", "", entry["command"])
    entry["command"] = command.replace(" -Winvalid-pch", "")
    entries.append(entry)
json.dump(entries, open(sys.argv[2], "w"))
PY
# The AVX-512 files silence a GCC-only warning (-Wmaybe-uninitialized) that clang does not know.
run-clang-tidy-16 -clang-tidy-binary clang-tidy-16 -p "$compile_db" -j "$(nproc)" -quiet \
    -extra-arg=-Wno-unknown-warning-option "$PWD/src/"
