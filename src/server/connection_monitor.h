// ConnectionMonitor: the server's watch over its TCP connections, on a thread of its own.
//
// Read budget: a connection must deliver each request, headers and body, within
// `read_budget_seconds` of becoming ready for it (accepted, or its previous response sent).
// Past that its socket is shut down and the HTTP library drops the connection. This is
// what stops slowloris clients: a byte now and then never trips an idle timeout, but it
// does not finish a request in time. Connections being served have no budget.
//
// Hang-ups: while a request is worked on, its connection can be watched; when the client
// closes its side (EPOLLRDHUP / EPOLLHUP / EPOLLERR) the callback runs once, on the
// monitor thread, so work done for nobody (generation) can be aborted at once.
//
// Callers guarantee a socket stays open while it is added or watched here (the transport
// removes it before the HTTP library closes it), so no shutdown() ever hits a reused fd.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/result.h"

namespace lmrun::server {

class ConnectionMonitor {
  public:
    struct Connection;

    // on_dropped runs on the monitor thread for each connection dropped for being too slow.
    ConnectionMonitor(double read_budget_seconds, std::function<void()> on_dropped);
    ~ConnectionMonitor();
    ConnectionMonitor(const ConnectionMonitor&) = delete;
    ConnectionMonitor& operator=(const ConnectionMonitor&) = delete;

    Status start();  // the monitor thread

    Connection* add(int fd);  // a new connection, reading its first request
    void remove(Connection* connection);
    void reading(Connection* connection);  // ready for its next request: the budget starts now
    void busy(Connection* connection);     // its request arrived whole

    // Returns an id for unwatch(), 0 if the socket cannot be watched.
    uint64_t watch(int fd, std::function<void()> on_hangup);
    void unwatch(uint64_t id);

    int64_t num_dropped() const { return num_dropped_; }

  private:
    struct Watch {
        int fd = -1;
        std::function<void()> on_hangup;
    };

    void run();
    void drop_late_connections();
    void hang_up(uint64_t id);

    const double read_budget_seconds_;
    const std::function<void()> on_dropped_;
    int epoll_fd_ = -1;
    int stop_fd_ = -1;  // eventfd that ends run()
    std::atomic<int64_t> num_dropped_{0};

    std::mutex mutex_;
    std::unordered_map<Connection*, std::unique_ptr<Connection>> connections_;
    std::unordered_map<uint64_t, Watch> watches_;
    uint64_t next_watch_id_ = 1;
    std::thread thread_;
};

}  // namespace lmrun::server
