#include "cli/serve_data_parallel.h"

#include <sched.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cli/exit_codes.h"
#include "cli/serve_until_signal.h"
#include "core/logging.h"
#include "router/replica_plan.h"
#include "router/replica_set.h"
#include "router/router_service.h"

namespace lmrun::cli {
namespace {

// This process's arguments after "serve", as typed (the replicas get the same, adjusted).
Result<std::vector<std::string>> own_serve_arguments() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> arguments;
    for (size_t begin = 0; begin < bytes.size();) {
        const size_t end = bytes.find('\0', begin);
        arguments.push_back(bytes.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
        if (end == std::string::npos) break;
        begin = end + 1;
    }
    auto serve = std::find(arguments.begin(), arguments.end(), "serve");
    if (serve == arguments.end()) return make_error("/proc/self/cmdline: no \"serve\" in the command line");
    return std::vector<std::string>(serve, arguments.end());
}

std::vector<int> usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    return cpus;
}

Result<std::vector<router::ReplicaSpec>> replica_specs(const DataParallelArgs& args) {
    LMRUN_ASSIGN_OR_RETURN(std::vector<std::string> serve_args, own_serve_arguments());
    const std::vector<std::vector<int>> shares = router::split_cpus(usable_cpus(), args.size);
    std::vector<router::ReplicaSpec> specs;
    for (int i = 0; i < args.size; ++i) {
        router::ReplicaShare share;
        share.num_threads = std::max<int>(1, int(shares[size_t(i)].size()));
        if (args.engine.kv_cache_memory_gib > 0)
            share.kv_cache_memory_gib = args.engine.kv_cache_memory_gib / args.size;
        else
            share.kv_cache_fraction = args.engine.kv_cache_fraction / args.size;
        LMRUN_ASSIGN_OR_RETURN(std::vector<std::string> arguments,
                               router::replica_arguments(serve_args, share));
        specs.push_back({std::move(arguments), shares[size_t(i)]});
    }
    return specs;
}

router::RouterServiceOptions router_options(const DataParallelArgs& args, router::PolicyKind policy) {
    router::RouterServiceOptions options;
    options.routing.policy.kind = policy;
    // The front listens and bounds its clients as serve's own would.
    static_cast<server::HttpServerOptions&>(options.server) = args.http;
    return options;
}

}  // namespace

int run_data_parallel_serve(const DataParallelArgs& args) {
    auto policy = router::parse_policy_kind(args.policy);
    if (!policy.ok()) return log_error("--data-parallel-policy: {}", policy.error().message), kExitUsage;
    auto specs = replica_specs(args);
    if (!specs.ok()) return log_error("{}", specs.error().message), kExitUsage;
    const sigset_t signals = block_shutdown_signals();

    router::ReplicaSetOptions replica_options;
    std::error_code error;  // the binary's own path, so that `ps` shows what the replicas are
    if (auto self = std::filesystem::read_symlink("/proc/self/exe", error); !error)
        replica_options.executable = self.string();
    router::ReplicaSet replicas(replica_options, std::move(specs).value());
    auto urls = replicas.start();
    if (!urls.ok()) return log_error("{}", urls.error().message), kExitModel;
    router::RouterService service(router_options(args, policy.value()));
    service.set_workers(*urls);
    auto port = service.bind();
    if (!port.ok()) {
        replicas.stop(args.shutdown_timeout_seconds);
        return log_error("{}", port.error().message), kExitUsage;
    }
    if (Status started = service.start(); !started.ok()) {
        replicas.stop(args.shutdown_timeout_seconds);
        return log_error("{}", started.error().message), kExitRuntime;
    }
    log_info("serving {} data-parallel replicas, policy {}", args.size, args.policy);
    log_info("listening on http://{}:{}", args.http.host, port.value());
    ServeWatch watch;
    watch.serve = [&] { return service.serve(); };
    watch.shutdown = [&](double timeout_seconds) { return service.shutdown(timeout_seconds); };
    watch.shutdown_timeout_seconds = args.shutdown_timeout_seconds;
    const ServeOutcome outcome = serve_until_signal(signals, watch);
    const bool replicas_ok = replicas.stop(args.shutdown_timeout_seconds);
    return exit_code_after_serving(outcome.served, outcome.drained && replicas_ok, "server",
                                   "some requests were cut off, or a replica did not stop cleanly");
}

}  // namespace lmrun::cli
