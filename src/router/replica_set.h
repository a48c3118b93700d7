// ReplicaSet: the child processes behind `lmrun serve --data-parallel-size N`: one
// `lmrun serve` per replica on 127.0.0.1, each pinned to its own CPUs (sched_setaffinity
// before exec, so its compute threads inherit it), in a process group of its own (a
// terminal's Ctrl-C reaches the parent only, which drains its router before stopping them)
// and killed with the parent if the parent dies (PR_SET_PDEATHSIG).
//
// Their stderr is read line by line and passed on prefixed with "replica I: "; the line
// "listening on http://HOST:PORT" gives the replica's address instead (and is not passed
// on as is: the parent's own "listening on" line is the one that counts). A replica that
// exits while the set runs is started again after `restart_delay_seconds`, on the same
// port, so the router's health checks bring it back.
//
// Processes rather than threads: a replica that crashes takes only itself down, and each
// has its own OpenMP pool and allocator on its own cores.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"

namespace lmrun::router {

struct ReplicaSpec {
    std::vector<std::string> arguments;  // after the executable; one "--port P" (replaced on restarts)
    std::vector<int> cpus;               // pinned to these; empty = not pinned
};

struct ReplicaSetOptions {
    std::string executable = "/proc/self/exe";
    double start_timeout_seconds = 600;  // until a replica logs its address
    double restart_delay_seconds = 1;
};

class ReplicaSet {
  public:
    ReplicaSet(ReplicaSetOptions options, std::vector<ReplicaSpec> specs);
    ~ReplicaSet();
    ReplicaSet(const ReplicaSet&) = delete;
    ReplicaSet& operator=(const ReplicaSet&) = delete;

    // Starts every replica and waits until each logged its address; their URLs, in order.
    // An error (naming the replica and quoting its last log lines) when one exits first or
    // the timeout passes; the others are then stopped.
    Result<std::vector<std::string>> start();
    // SIGTERM to every replica (each drains as `lmrun serve` does), SIGKILL to those still
    // running after `timeout_seconds`. True when every replica exited with 0.
    bool stop(double timeout_seconds);

    std::vector<pid_t> pids() const;
    int64_t num_restarts() const;

  private:
    struct Replica;

    Status spawn(Replica& replica);
    void read_log(Replica& replica, int fd);
    void supervise();
    std::string last_lines(const Replica& replica) const;

    const ReplicaSetOptions options_;
    std::vector<std::unique_ptr<Replica>> replicas_;
    std::thread supervisor_;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    bool stopping_ = false;
    int64_t num_restarts_ = 0;
};

}  // namespace lmrun::router
