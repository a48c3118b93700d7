#include "router/router_service.h"

namespace lmrun::router {

RouterService::RouterService(RouterServiceOptions options)
    : options_(std::move(options)),
      router_(options_.routing),
      server_(options_.server, router_, client_),
      health_(options_.health, router_, client_,
              [this](int32_t worker_id) { server_.on_worker_down(worker_id); }) {}

RouterService::~RouterService() {
    health_.stop();
    client_.stop();
}

void RouterService::set_workers(const std::vector<std::string>& urls) {
    router_.set_worker_urls(urls);
    health_.probe_now();
}

Result<int> RouterService::bind() {
    return server_.bind();
}

Status RouterService::start() {
    LMRUN_RETURN_IF_ERROR(client_.start());
    health_.probe_all_and_wait();
    health_.start();
    return ok_status();
}

Status RouterService::serve() {
    return server_.serve();
}

bool RouterService::shutdown(double timeout_seconds) {
    const bool drained = server_.shutdown(timeout_seconds);
    health_.stop();
    client_.stop();
    return drained;
}

}  // namespace lmrun::router
