#!/usr/bin/env bash
# Installs lmrun's build and test dependencies from Debian's packages (and the
# npm packages the server tests use). Idempotent; run as root on a fresh
# Debian 12 machine. Skips apt entirely when everything is already present.
set -euo pipefail

DEB_PACKAGES=(
    build-essential cmake ninja-build pkg-config git
    libdnnl-dev            # oneDNN: BF16/AMX matrix products
    nlohmann-json3-dev     # config.json, safetensors headers, HTTP bodies
    libmicrohttpd-dev      # the server's HTTP layer (lmrun serve)
    libcpp-httplib-dev     # HTTP client of tools/bench_serve and the server's C++ tests
    libcli11-dev           # command line
    libfmt-dev
    libxxhash-dev          # prefix-cache block hashes
    libpcre2-dev           # tokenizer pre-tokenizer regex
    libicu-dev             # NFC normalization
    libgtest-dev libgmock-dev libbenchmark-dev
    curl
)

missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "install_deps: installing ${missing[*]}"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Server integration tests: the official OpenAI client library (npm package `openai`)
# under Node, pinned by tests/server/package-lock.json. node and npm come with the
# machine (Debian's npm package conflicts with them: do not apt-get it).
SERVER_TESTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/server"
if ! command -v npm >/dev/null 2>&1; then
    echo "install_deps: npm not found; the server integration tests need node >= 20 and npm" >&2
    exit 1
fi
if [ ! -f "$SERVER_TESTS_DIR/node_modules/openai/package.json" ]; then
    echo "install_deps: npm ci in tests/server"
    (cd "$SERVER_TESTS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi
