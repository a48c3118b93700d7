#include "server/connection_monitor.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/logging.h"

namespace lmrun::server {
namespace {

// How often read budgets are checked: a slow connection lives at most this much past its budget.
constexpr int kSweepMilliseconds = 100;

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

struct ConnectionMonitor::Connection {
    int fd = -1;
    bool reading = true;
    bool dropped = false;
    double deadline = 0;  // while reading
};

ConnectionMonitor::ConnectionMonitor(double read_budget_seconds, std::function<void()> on_dropped)
    : read_budget_seconds_(read_budget_seconds), on_dropped_(std::move(on_dropped)) {}

ConnectionMonitor::~ConnectionMonitor() {
    if (thread_.joinable()) {
        const uint64_t one = 1;
        if (write(stop_fd_, &one, sizeof one) != sizeof one) log_error("connection monitor: cannot stop");
        thread_.join();
    }
    if (stop_fd_ >= 0) close(stop_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
}

Status ConnectionMonitor::start() {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = 0;  // watch ids start at 1
    if (epoll_fd_ < 0 || stop_fd_ < 0 || epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &event) != 0)
        return make_error(ErrorKind::Unavailable, "connection monitor: {}", std::strerror(errno));
    thread_ = std::thread([this] { run(); });
    return ok_status();
}

ConnectionMonitor::Connection* ConnectionMonitor::add(int fd) {
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    connection->deadline = now_seconds() + read_budget_seconds_;
    Connection* raw = connection.get();
    std::lock_guard lock(mutex_);
    connections_.emplace(raw, std::move(connection));
    return raw;
}

void ConnectionMonitor::remove(Connection* connection) {
    std::lock_guard lock(mutex_);
    connections_.erase(connection);
}

void ConnectionMonitor::reading(Connection* connection) {
    const double deadline = now_seconds() + read_budget_seconds_;
    std::lock_guard lock(mutex_);
    connection->reading = true;
    connection->deadline = deadline;
}

void ConnectionMonitor::busy(Connection* connection) {
    std::lock_guard lock(mutex_);
    connection->reading = false;
}

uint64_t ConnectionMonitor::watch(int fd, std::function<void()> on_hangup) {
    std::lock_guard lock(mutex_);
    const uint64_t id = next_watch_id_++;
    epoll_event event{};
    event.events = EPOLLRDHUP;  // EPOLLHUP and EPOLLERR are always reported
    event.data.u64 = id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) return 0;
    watches_.emplace(id, Watch{fd, std::move(on_hangup)});
    return id;
}

void ConnectionMonitor::unwatch(uint64_t id) {
    std::lock_guard lock(mutex_);
    auto found = watches_.find(id);
    if (found == watches_.end()) return;  // fired already
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, found->second.fd, nullptr);
    watches_.erase(found);
}

void ConnectionMonitor::hang_up(uint64_t id) {
    std::function<void()> on_hangup;
    {
        std::lock_guard lock(mutex_);
        auto found = watches_.find(id);
        if (found == watches_.end()) return;
        // Level-triggered: the event repeats until the socket leaves the set.
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, found->second.fd, nullptr);
        on_hangup = std::move(found->second.on_hangup);
        watches_.erase(found);
    }
    if (on_hangup) on_hangup();
}

void ConnectionMonitor::drop_late_connections() {
    const double now = now_seconds();
    int64_t num_dropped = 0;
    {
        std::lock_guard lock(mutex_);
        for (auto& [raw, connection] : connections_) {
            if (!connection->reading || connection->dropped || now < connection->deadline) continue;
            // The HTTP library sees end of file / an error on its next read and closes the connection.
            shutdown(connection->fd, SHUT_RDWR);
            connection->dropped = true;
            ++num_dropped;
        }
    }
    num_dropped_ += num_dropped;
    for (int64_t i = 0; i < num_dropped && on_dropped_; ++i) on_dropped_();
}

void ConnectionMonitor::run() {
    std::vector<epoll_event> events(64);
    double next_sweep = now_seconds() + kSweepMilliseconds / 1000.0;
    for (;;) {
        const int count = epoll_wait(epoll_fd_, events.data(), int(events.size()), kSweepMilliseconds);
        for (int i = 0; i < count; ++i) {
            if (events[size_t(i)].data.u64 == 0) return;  // stop
            hang_up(events[size_t(i)].data.u64);
        }
        if (now_seconds() >= next_sweep) {
            drop_late_connections();
            next_sweep = now_seconds() + kSweepMilliseconds / 1000.0;
        }
    }
}

}  // namespace lmrun::server
