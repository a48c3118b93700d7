#!/usr/bin/env bash
# Installs what lmrun needs from Debian 12's packages. Idempotent; run as root (or with sudo).
# Skips apt entirely when everything is already present.
#   scripts/install_deps.sh demo   build lmrun and run it (what scripts/demo.sh needs)
#   scripts/install_deps.sh test   also the test suite and CI checks (what scripts/test.sh needs):
#                                  GoogleTest, clang-format/clang-tidy, clang + libFuzzer, curl, Node.js and npm
#                                  (Debian's, only when `node`/`npm` are missing), then `npm ci`
#                                  of the server tests' pinned OpenAI client.
set -euo pipefail

what="${1:-test}"
case "$what" in
    demo | test) ;;
    *)
        echo "usage: $0 demo|test" >&2
        exit 2
        ;;
esac

DEMO_PACKAGES=(
    build-essential cmake ninja-build pkg-config
    libdnnl-dev            # oneDNN: BF16/AMX matrix products
    nlohmann-json3-dev     # config.json, safetensors headers, HTTP bodies
    libmicrohttpd-dev      # the server's HTTP layer (lmrun serve)
    libcpp-httplib-dev     # HTTP client of tools/bench_serve and the server's C++ tests
    libcurl4-openssl-dev   # the router's client towards its workers (libcurl's multi interface)
    libcli11-dev           # command line
    libfmt-dev
    libxxhash-dev          # prefix-cache block hashes
    libpcre2-dev           # tokenizer pre-tokenizer regex
    libicu-dev             # NFC normalization
    libopenmpi-dev openmpi-bin  # tensor parallelism across machines: the mpi backend (mpirun)
    libnuma-dev            # tensor parallelism: each rank's memory on its own NUMA node
    pybind11-dev python3-dev   # the Python package's native module (python/, CMake target lmrun_python)
    python3-venv python3-setuptools python3-wheel  # `pip install --no-build-isolation --no-index .` in a venv
)
TEST_PACKAGES=(
    libgtest-dev           # the unit tests
    python3-pytest         # the Python package's tests (tests/python)
    curl                   # the server tests' raw SSE checks
    python3-jsonschema     # tests: independent validator of structured (JSON Schema) outputs
    python3-jinja2         # tests: reference renderings of the Qwen3 chat template (tool calls)
    clang-format-16        # CI: formatting check
    clang-tidy-16          # CI: lint (bugprone-*, performance-*)
    libomp-16-dev          # CI: an omp.h that clang-tidy's clang can parse (GCC's is not on its path)
    git                    # CI: the formatting check lists the tracked files
    clang-16 libfuzzer-16-dev libclang-rt-16-dev  # fuzz targets (tests/fuzz, scripts/fuzz.sh): libFuzzer, ASan/UBSan
    ccache                 # CI: compiles cached between runs of scripts/test.sh (in ~/.cache/ccache)
)
# Node.js runs the server integration tests with the official OpenAI client. A machine may
# already have node and npm from elsewhere (e.g. NodeSource's nodejs, which bundles npm and
# conflicts with Debian's npm package): install Debian's only for what is missing.
NODE_PACKAGES=()
if [ "$what" = test ]; then
    command -v node >/dev/null 2>&1 || NODE_PACKAGES+=(nodejs)
    command -v npm >/dev/null 2>&1 || NODE_PACKAGES+=(npm)
fi

packages=("${DEMO_PACKAGES[@]}")
if [ "$what" = test ]; then packages+=("${TEST_PACKAGES[@]}" ${NODE_PACKAGES[@]+"${NODE_PACKAGES[@]}"}); fi

missing=()
for pkg in "${packages[@]}"; do
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

if [ "$what" = test ]; then
    # The server tests' client, pinned by tests/server/package-lock.json.
    SERVER_TESTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/server"
    if [ ! -f "$SERVER_TESTS_DIR/node_modules/openai/package.json" ]; then
        echo "install_deps: npm ci in tests/server"
        (cd "$SERVER_TESTS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    fi
fi
