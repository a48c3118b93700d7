// `lmrun serve --data-parallel-size N` (vLLM's flag): N replicas of the server on this
// machine behind one port. The replicas are child processes (router/replica_set.h), each
// pinned to its share of the CPUs with 1/N of the KV budget (router/replica_plan.h); this
// process runs the router in front of them (router/router_service.h) with
// --data-parallel-policy, on the serve command's own address, API key and limits.
// SIGINT/SIGTERM drain the router first (requests in flight finish until
// --shutdown-timeout), then stop the replicas. Exit code 0 when everything drained and
// every replica exited 0, 4 otherwise; 1 for a bad option, 2 when a replica cannot start.
#pragma once

#include <string>

#include "cli/cli_options.h"
#include "server/http_server.h"

namespace lmrun::cli {

struct DataParallelArgs {
    int size = 1;
    std::string policy = "cache_aware";
    server::HttpServerOptions http;  // the front's
    EngineOptions engine;            // the KV budget to divide
    double shutdown_timeout_seconds = 30;
};

int run_data_parallel_serve(const DataParallelArgs& args);

}  // namespace lmrun::cli
