#include "router/replica_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace lmrun::router {

std::vector<std::vector<int>> split_cpus(const std::vector<int>& cpus, int n) {
    std::vector<std::vector<int>> shares(size_t(std::max(n, 0)));
    if (shares.empty() || cpus.empty()) return shares;
    if (int(cpus.size()) < n) {
        for (int i = 0; i < n; ++i) shares[size_t(i)] = {cpus[size_t(i) % cpus.size()]};
        return shares;
    }
    size_t next = 0;
    for (int i = 0; i < n; ++i) {
        // The first (size % n) shares take one more CPU.
        const size_t count = cpus.size() / size_t(n) + (size_t(i) < cpus.size() % size_t(n) ? 1 : 0);
        shares[size_t(i)].assign(cpus.begin() + long(next), cpus.begin() + long(next + count));
        next += count;
    }
    return shares;
}

const std::vector<std::string> kReplicaOwnOptions = {"--host",
                                                     "--port",
                                                     "--threads",
                                                     "--kv-cache-memory",
                                                     "--kv-cache-fraction",
                                                     "--data-parallel-size",
                                                     "--data-parallel-policy"};

Result<std::vector<std::string>> replica_arguments(const std::vector<std::string>& serve_args,
                                                   const ReplicaShare& share) {
    std::vector<std::string> out;
    for (size_t i = 0; i < serve_args.size(); ++i) {
        const std::string& arg = serve_args[i];
        const size_t equals = arg.find('=');
        const std::string name = arg.rfind("--", 0) == 0 ? arg.substr(0, equals) : std::string();
        if (std::find(kReplicaOwnOptions.begin(), kReplicaOwnOptions.end(), name) ==
            kReplicaOwnOptions.end()) {
            out.push_back(arg);
            continue;
        }
        // Each of these takes exactly one value: inline after '=', or the next argument.
        if (equals == std::string::npos) {
            if (i + 1 >= serve_args.size()) return make_error("{} needs a value", name);
            ++i;
        }
    }
    out.insert(out.end(), {"--host", "127.0.0.1", "--port", std::to_string(share.port), "--threads",
                           std::to_string(share.num_threads)});
    if (share.kv_cache_memory_gib > 0) {
        out.insert(out.end(), {"--kv-cache-memory", fmt::format("{}", share.kv_cache_memory_gib)});
    } else if (share.kv_cache_fraction > 0) {
        out.insert(out.end(), {"--kv-cache-fraction", fmt::format("{}", share.kv_cache_fraction)});
    }
    return out;
}

}  // namespace lmrun::router
