// lmrun router: an OpenAI-compatible front over `lmrun serve` workers (--worker URL,
// repeatable, and/or --worker-file FILE, re-read on SIGHUP), routing each request by
// --policy (round_robin, least_load, session, cache_aware). Same endpoints, API key and
// limits as `lmrun serve`; SIGINT/SIGTERM drain like serve's (exit 0, or 4 when requests
// had to be cut off at --shutdown-timeout); 1 for a bad option. Logs "listening on
// http://HOST:PORT" once it accepts requests.
#include <csignal>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/serve_until_signal.h"
#include "cli/server_limits.h"
#include "core/logging.h"
#include "router/router_service.h"
#include "router/worker_list.h"

namespace lmrun::cli {
namespace {

struct RouterArgs {
    router::RouterServiceOptions service;
    std::vector<std::string> worker_urls;
    std::string worker_file;
    std::string policy = "cache_aware";
    double max_tree_mb = 64;
    int64_t max_request_body_mb = 64;
    double shutdown_timeout_seconds = 30;
    CLI::Option* max_connections_option = nullptr;
};

Result<std::vector<std::string>> collect_workers(const RouterArgs& args) {
    std::vector<std::string> urls;
    for (const std::string& text : args.worker_urls) {
        LMRUN_ASSIGN_OR_RETURN(std::string url, router::parse_worker_url(text, "--worker"));
        if (std::find(urls.begin(), urls.end(), url) == urls.end()) urls.push_back(url);
    }
    if (!args.worker_file.empty()) {
        LMRUN_ASSIGN_OR_RETURN(std::vector<std::string> listed, router::read_worker_file(args.worker_file));
        for (std::string& url : listed)
            if (std::find(urls.begin(), urls.end(), url) == urls.end()) urls.push_back(std::move(url));
    }
    if (urls.empty() && args.worker_file.empty())
        return make_error("no workers: give --worker URL or --worker-file FILE");
    return urls;
}

// The ranges are checked while parsing (add_router_command); this derives what they imply.
Status check_router_args(RouterArgs& args) {
    router::RouterServerOptions& http = args.service.server;
    LMRUN_ASSIGN_OR_RETURN(args.service.routing.policy.kind, router::parse_policy_kind(args.policy));
    args.service.routing.max_tree_bytes_per_worker = size_t(args.max_tree_mb * (1 << 20));
    http.max_request_body_bytes = size_t(args.max_request_body_mb) << 20;
    http.proxy.connect_timeout_seconds = args.service.health.timeout_seconds;
    args.service.health.api_key = http.proxy.worker_api_key;
    return fit_connections_to_file_limit(http.max_connections, args.max_connections_option->count() > 0);
}

// SIGHUP: the worker list is read again; a list that does not read keeps the current workers.
void reload_workers(const RouterArgs& args, router::RouterService& service) {
    Result<std::vector<std::string>> urls = collect_workers(args);
    if (!urls.ok()) {
        log_error("SIGHUP: keeping the current workers: {}", urls.error().message);
        return;
    }
    log_info("SIGHUP: {} workers", urls->size());
    service.set_workers(*urls);
}

int run_router(RouterArgs& args) {
    if (Status valid = check_router_args(args); !valid.ok())
        return log_error("{}", valid.error().message), kExitUsage;
    Result<std::vector<std::string>> urls = collect_workers(args);
    if (!urls.ok()) return log_error("{}", urls.error().message), kExitUsage;
    const sigset_t signals = block_shutdown_signals({SIGHUP});

    router::RouterService service(args.service);
    service.set_workers(*urls);
    auto port = service.bind();
    if (!port.ok()) return log_error("{}", port.error().message), kExitUsage;
    if (Status started = service.start(); !started.ok())
        return log_error("{}", started.error().message), kExitRuntime;
    log_info("routing to {} workers ({} up), policy {}", urls->size(), service.router().num_routable(),
             args.policy);
    log_info("listening on http://{}:{}", args.service.server.host, port.value());
    ServeWatch watch;
    watch.serve = [&] { return service.serve(); };
    watch.shutdown = [&](double timeout_seconds) { return service.shutdown(timeout_seconds); };
    watch.shutdown_timeout_seconds = args.shutdown_timeout_seconds;
    watch.on_other_signal = [&](int) { reload_workers(args, service); };  // SIGHUP, the only other
    const ServeOutcome outcome = serve_until_signal(signals, watch);
    return exit_code_after_serving(outcome.served, outcome.drained, "router",
                                   "some requests were cut off at the --shutdown-timeout deadline");
}

void add_routing_options(CLI::App& command, RouterArgs& args) {
    router::PolicyOptions& policy = args.service.routing.policy;
    command.add_option("--worker", args.worker_urls, "A worker's URL, http://host:port (repeatable)");
    command.add_option("--worker-file", args.worker_file,
                       "File of worker URLs, one per line ('#' comments); re-read on SIGHUP");
    command.add_option("--policy", args.policy, "round_robin, least_load, session or cache_aware")
        ->check(CLI::IsMember({"round_robin", "least_load", "session", "cache_aware"}))
        ->capture_default_str();
    command
        .add_option("--cache-threshold", policy.cache_threshold,
                    "cache_aware: smallest fraction of the prompt a worker must hold to be preferred")
        ->check(finite_range(0, 1))
        ->capture_default_str();
    command
        .add_option("--balance-abs-threshold", policy.balance_abs_tokens,
                    "cache_aware: a worker is overloaded past this many tokens above the least loaded...")
        ->check(integer_range(0, int64_t(1) << 40))
        ->capture_default_str();
    command.add_option("--balance-rel-threshold", policy.balance_rel, "... and past this factor of its load")
        ->check(finite_range(1, 1e6))
        ->capture_default_str();
    command
        .add_option("--max-tree-mb", args.max_tree_mb,
                    "Prompt text remembered per worker for cache_aware (MiB; least recently used evicted)")
        ->check(finite_range(0.001, 1e6))
        ->capture_default_str();
    command.add_option("--max-sessions", policy.max_sessions, "session: keys remembered")
        ->check(integer_range(1, int64_t(1) << 40))
        ->capture_default_str();
    command
        .add_option("--health-interval", args.service.health.interval_seconds, "Seconds between load probes")
        ->check(finite_range(0.01, 3600))
        ->capture_default_str();
    command
        .add_option("--health-timeout", args.service.health.timeout_seconds,
                    "Seconds a probe (and a connection to a worker) may take")
        ->check(finite_range(0.01, 3600))
        ->capture_default_str();
    command
        .add_option("--health-failures", args.service.routing.failures_to_down,
                    "Probes timing out in a row before a worker is taken out")
        ->check(integer_range(1, 1000))
        ->capture_default_str();
    command
        .add_option("--max-attempts", args.service.server.proxy.max_attempts,
                    "Workers a request may be tried on before the router gives up")
        ->check(integer_range(1, 100))
        ->capture_default_str();
}

void add_front_options(CLI::App& command, RouterArgs& args) {
    router::RouterServerOptions& http = args.service.server;
    command.add_option("--host", http.host, "Address to listen on")->capture_default_str();
    command.add_option("--port", http.port, "Port (0 = any free port)")
        ->check(integer_range(0, 65535))
        ->capture_default_str();
    command.add_option(
        "--api-key", http.api_key,
        "Require 'Authorization: Bearer KEY' on /v1, /tokenize, /detokenize (or LMRUN_API_KEY)");
    command.add_flag("--allow-unauthenticated-tokenize", http.allow_unauthenticated_tokenize,
                     "With --api-key, leave /tokenize and /detokenize open (as vLLM does)");
    command.add_option("--worker-api-key", http.proxy.worker_api_key,
                       "Key sent to the workers (or LMRUN_WORKER_API_KEY); default: the client's own header");
    command.add_option("--http-threads", http.http_threads, "Worker threads that read and route requests")
        ->check(integer_range(1, 1024))
        ->capture_default_str();
    args.max_connections_option =
        command.add_option("--max-connections", http.max_connections, "Open client connections at most")
            ->check(integer_range(1, 1 << 20))
            ->capture_default_str();
    command.add_option("--max-request-body-mb", args.max_request_body_mb, "Largest request body in MiB")
        ->check(integer_range(1, 4096))
        ->capture_default_str();
    command
        .add_option("--request-timeout", http.request_timeout_seconds,
                    "Seconds a client has to send a whole request")
        ->check(finite_range(0.1, 86400))
        ->capture_default_str();
    command
        .add_option("--idle-timeout", http.idle_timeout_seconds,
                    "Seconds without a byte before a connection closes")
        ->check(integer_range(1, 86400))
        ->capture_default_str();
    command
        .add_option("--shutdown-timeout", args.shutdown_timeout_seconds,
                    "Seconds requests in flight may take to finish on SIGINT/SIGTERM; then they are cut off "
                    "and the exit code is 4")
        ->check(finite_range(0, 86400))
        ->capture_default_str();
}

}  // namespace

CommandRunner add_router_command(CLI::App& app) {
    auto args = std::make_shared<RouterArgs>();
    if (const char* key = std::getenv("LMRUN_API_KEY")) args->service.server.api_key = key;
    if (const char* key = std::getenv("LMRUN_WORKER_API_KEY"))
        args->service.server.proxy.worker_api_key = key;
    CLI::App* command =
        app.add_subcommand("router", "Route OpenAI-compatible requests to lmrun serve workers");
    add_routing_options(*command, *args);
    add_front_options(*command, *args);
    return [args] { return run_router(*args); };
}

}  // namespace lmrun::cli
