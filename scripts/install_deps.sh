#!/usr/bin/env bash
# Installs lmrun's build and test dependencies from Debian's packages (and the
# npm packages the server tests use). Idempotent; run as root on a fresh
# Debian 12 machine. Skips apt entirely when everything is already present.
set -euo pipefail

DEB_PACKAGES=(
    build-essential cmake ninja-build pkg-config git
    libdnnl-dev            # oneDNN: BF16/AMX matrix products
    nlohmann-json3-dev     # config.json, safetensors headers, HTTP bodies
    libcpp-httplib-dev     # OpenAI-compatible HTTP server
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
