#!/usr/bin/env bash
# Fails (and lists the differences) when a tracked C++ file is not formatted as .clang-format
# says. Fix with: git ls-files '*.cpp' '*.h' | xargs clang-format-16 -i
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z '*.cpp' '*.h' | xargs -0 -r clang-format-16 --dry-run --Werror
