#include "router/health_checker.h"

#include <chrono>

#include "core/json_io.h"

namespace lmrun::router {

bool parse_load_report(const std::string& body, LoadReport& report) {
    Result<nlohmann::json> json = parse_json(body, "/load");
    if (!json.ok() || !json->is_object()) return false;
    auto read = [&](const char* name, int64_t& out) {
        auto found = json->find(name);
        if (found == json->end() || !found->is_number_integer()) return false;
        out = found->get<int64_t>();
        return out >= 0;
    };
    if (!read("load_tokens", report.load_tokens)) return false;
    if (!read("kv_capacity_tokens", report.kv_capacity_tokens)) report.kv_capacity_tokens = 0;
    return true;
}

HealthChecker::HealthChecker(HealthCheckOptions options, Router& router, UpstreamClient& client,
                             std::function<void(int32_t)> on_worker_down)
    : options_(std::move(options)),
      router_(router),
      client_(client),
      on_worker_down_(std::move(on_worker_down)) {}

HealthChecker::~HealthChecker() {
    stop();
}

void HealthChecker::start() {
    thread_ = std::thread([this] { run(); });
}

void HealthChecker::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void HealthChecker::probe(int32_t worker_id, const std::string& url) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || !probing_.insert(worker_id).second) return;
    }
    const uint64_t mark = router_.begin_probe(worker_id);
    UpstreamRequest request;
    request.url = url + "/load";
    request.connect_timeout_seconds = options_.timeout_seconds;
    request.timeout_seconds = options_.timeout_seconds;
    if (!options_.api_key.empty())
        request.headers.emplace_back("Authorization", "Bearer " + options_.api_key);
    auto done = [this, worker_id, mark](const BufferedResponse& response) {
        HealthChange change = HealthChange::None;
        LoadReport report;
        const UpstreamResult& result = response.result;
        if (result.failure == UpstreamFailure::None && result.status == 200 &&
            parse_load_report(response.body, report))
            change = router_.report_load(worker_id, mark, report);
        else if (result.failure == UpstreamFailure::None && result.status == 503)
            change = router_.report_failure(worker_id, WorkerFailure::Draining);
        else if (result.failure == UpstreamFailure::Connect || result.failure == UpstreamFailure::Transfer)
            change = router_.report_failure(worker_id, WorkerFailure::Unreachable);
        else if (result.failure != UpstreamFailure::Cancelled)
            change =
                router_.report_failure(worker_id, WorkerFailure::Timeout);  // or an answer that is no report
        if (change == HealthChange::Down && on_worker_down_) on_worker_down_(worker_id);
        {
            std::lock_guard lock(mutex_);
            probing_.erase(worker_id);
        }
        changed_.notify_all();
    };
    client_.submit(std::move(request), buffered_handler(std::move(done), size_t(1) << 20));
}

void HealthChecker::probe_round() {
    for (const WorkerStatus& worker : router_.workers())
        if (worker.listed) probe(worker.id, worker.url);
}

void HealthChecker::probe_all_and_wait() {
    probe_round();
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::duration<double>(options_.timeout_seconds + 1),
                      [&] { return probing_.empty() || stopping_; });
}

void HealthChecker::run() {
    for (;;) {
        probe_round();
        std::unique_lock lock(mutex_);
        if (changed_.wait_for(lock, std::chrono::duration<double>(options_.interval_seconds),
                              [&] { return stopping_; }))
            return;
    }
}

}  // namespace lmrun::router
