#!/usr/bin/env bash
# Installs what the demo needs (scripts/install_deps.sh demo: no test tools, no Node.js),
# builds the `lmrun` command (Release) and generates text with the default model
# (../shared/testdata/stories260k). Extra arguments go to `lmrun generate`, e.g.
# scripts/demo.sh --prompt "Once upon a time" --max-tokens 64
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh demo
# The same build tree as scripts/test.sh (a one-off build: src/ in unity batches); the demo
# only needs the command, not the tests.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMRUN_BUILD_TESTS=OFF -DLMRUN_UNITY_BUILD=ON >/dev/null
cmake --build build -j "$(nproc)" --target lmrun
model="${LMRUN_MODEL:-../shared/testdata/stories260k}"
if [ $# -eq 0 ]; then set -- --prompt-ids 1 --max-tokens 200; fi
./build/lmrun generate --model "$model" "$@"
