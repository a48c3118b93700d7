// RouterService: a whole router in one object — the Router (workers, policy, prefix tree),
// the UpstreamClient, the HealthChecker and the RouterServer front — started and stopped
// together. `lmrun router` runs one over remote workers; `lmrun serve --data-parallel-size`
// runs one over its own replicas.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "router/health_checker.h"
#include "router/router.h"
#include "router/router_server.h"
#include "router/upstream_client.h"

namespace lmrun::router {

struct RouterServiceOptions {
    RouterOptions routing;
    RouterServerOptions server;
    HealthCheckOptions health;
};

class RouterService {
  public:
    explicit RouterService(RouterServiceOptions options);
    ~RouterService();

    // Replaces the worker list (added workers are probed at once, removed ones get no more requests).
    void set_workers(const std::vector<std::string>& urls);
    Result<int> bind();
    // The client and the health checks; returns once every worker answered its first probe (or failed).
    Status start();
    // Serves until shutdown() finished.
    Status serve();
    // True when every request in flight finished before the deadline.
    bool shutdown(double timeout_seconds);

    Router& router() { return router_; }

  private:
    RouterServiceOptions options_;
    Router router_;
    UpstreamClient client_;
    RouterServer server_;
    HealthChecker health_;
};

}  // namespace lmrun::router
