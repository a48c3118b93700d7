// HealthChecker: probes every listed worker's GET /load every `interval_seconds` (on the
// UpstreamClient, so probes never wait for each other), and reports to the Router: a
// load report (which also brings a worker back), or a failure (refused connection: down
// at once; no answer within `timeout_seconds`: a strike; 503: draining). When a worker
// goes down, `on_worker_down` runs (on the client's loop thread) so that the requests in
// flight to it are cancelled: those not yet answering are retried elsewhere, streams end
// with an error event.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "router/router.h"
#include "router/upstream_client.h"

namespace lmrun::router {

struct HealthCheckOptions {
    double interval_seconds = 1;
    double timeout_seconds = 5;
    std::string api_key;  // sent as a bearer token (workers keep /load open; a proxy in front may not)
};

// Parses a worker's /load body.
bool parse_load_report(const std::string& body, LoadReport& report);

class HealthChecker {
  public:
    HealthChecker(HealthCheckOptions options, Router& router, UpstreamClient& client,
                  std::function<void(int32_t worker_id)> on_worker_down);
    ~HealthChecker();

    void start();
    void stop();
    // Probes every listed worker now and waits until all answered or failed (at most the
    // probe timeout plus a little): at start-up, so the first requests find healthy workers.
    void probe_all_and_wait();
    // Probes every listed worker now, without waiting (a worker list that just changed).
    void probe_now() { probe_round(); }

  private:
    void run();
    void probe(int32_t worker_id, const std::string& url);
    void probe_round();

    const HealthCheckOptions options_;
    Router& router_;
    UpstreamClient& client_;
    const std::function<void(int32_t)> on_worker_down_;
    std::thread thread_;

    std::mutex mutex_;
    std::condition_variable changed_;
    std::set<int32_t> probing_;  // a probe is out: do not send another
    bool stopping_ = false;
};

}  // namespace lmrun::router
