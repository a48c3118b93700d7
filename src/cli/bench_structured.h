// lmrun bench --structured: the cost of structured output. Compiling typical JSON
// Schemas for the model's vocabulary (cold and cached); the time to fill one
// token mask (median, p99, max over every token of a constrained generation,
// replayed against a freshly compiled grammar so that first visits of each
// automaton state count, then again warm; CPU time and wall time, since on a
// shared machine wall time also counts other processes); and decode throughput of a batch of JSON-schema
// constrained requests against the same requests unconstrained, in the same run
// with the same per-request lengths (the constrained run ends where the JSON
// does; the unconstrained one is told to generate exactly as many tokens), by
// wall time and by the process's CPU time, with the load average around it.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "engine/llm_engine.h"

namespace lmrun::cli {

struct StructuredBenchOptions {
    int64_t batch = 8;
    int64_t prompt_len = 128;
    int64_t max_tokens = 256;
    int64_t repeats = 3;
};

// Prints its report to stdout; returns it as JSON.
Result<nlohmann::json> run_structured_bench(const EngineConfig& config,
                                            const StructuredBenchOptions& options);

}  // namespace lmrun::cli
