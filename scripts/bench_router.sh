#!/usr/bin/env bash
# Router benchmark (issue 14): the same multi-turn, shared-prefix workload through
# `lmrun router` over $WORKERS workers (default 2; worker i pinned to core i mod nproc), once per policy, fresh workers each time (empty caches).
# Prints bench_serve's report per policy and writes JSON to $OUT/POLICY.json.
#   scripts/bench_router.sh [SHAPE=8x32x4] ; env: WORKERS, MODEL, TOKENIZER, KV_GIB, BLOCK, SYS_LEN,
#   TURN_LEN, OUT_LEN, CONCURRENCY, POLICIES, OUT
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPE=${1:-8x32x4}
WORKERS=${WORKERS:-2}
MODEL=${MODEL:-../shared/testdata/qwen3-tiny}
TOKENIZER=${TOKENIZER:-../shared/testdata/qwen3-tokenizer}
KV_GIB=${KV_GIB:-0.0117}
BLOCK=${BLOCK:-16}
SYS_LEN=${SYS_LEN:-1024}
TURN_LEN=${TURN_LEN:-64}
OUT_LEN=${OUT_LEN:-32}
CONCURRENCY=${CONCURRENCY:-8}
POLICIES=${POLICIES:-"round_robin cache_aware"}
OUT=${OUT:-/tmp/bench_router}
mkdir -p "$OUT"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
for policy in $POLICIES; do
    pids=()
    worker_urls=()
    for ((i = 0; i < WORKERS; i++)); do
        taskset -c "$((i % $(nproc)))" build/lmrun serve --model "$MODEL" --tokenizer "$TOKENIZER" --port $((18300 + i)) \
            --threads 1 --block-size "$BLOCK" --kv-cache-memory "$KV_GIB" 2> "$OUT/worker$i.log" &
        pids+=($!)
        worker_urls+=(--worker "http://127.0.0.1:$((18300 + i))")
    done
    sleep 3
    build/lmrun router "${worker_urls[@]}" --port 18310 \
        --policy "$policy" 2> "$OUT/router_$policy.log" &
    pids+=($!)
    sleep 2
    echo "=== $policy (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
    build/bench_serve --base-url http://127.0.0.1:18310 --multi-turn "$SHAPE" --system-prompt-len "$SYS_LEN" \
        --turn-input-len "$TURN_LEN" --random-output-len "$OUT_LEN" --max-concurrency "$CONCURRENCY" \
        --random-max-token-id 30000 --json-output "$OUT/$policy.json"
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    cleanup
    wait 2>/dev/null || true
done
