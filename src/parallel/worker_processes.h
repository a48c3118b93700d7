// The worker ranks of the mp backend: processes of this same executable (fork + exec of
// /proc/self/exe with the hidden `worker` arguments, see worker_main.h), started by rank 0
// and watched by it. A fresh exec, rather than a bare fork, because OpenMP's and oneDNN's
// thread pools do not survive fork() once started, and a library user's process may have
// started them long before it creates an engine.
//
// A watcher thread starts the workers and then waits on their pidfds: a worker that exits
// while it should be running is reported to on_failure at once (the executor fails the
// group, which wakes every waiting rank). The workers die with that thread
// (PR_SET_PDEATHSIG, set before exec), so they never outlive rank 0, and each also checks
// its parent in every sleeping wait.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "parallel/placement.h"

namespace lmrun::parallel {

struct WorkerLaunch {
    std::string executable = "/proc/self/exe";
    int group_fd = -1;                      // the group's shared memory, inherited by the workers
    int size = 2;                           // ranks, rank 0 included
    std::vector<RankPlacement> placements;  // by rank
};

class WorkerProcesses {
  public:
    using FailureCallback = std::function<void(const std::string& reason)>;
    // Starts ranks 1 .. size - 1. on_failure runs on the watcher thread.
    static Result<std::unique_ptr<WorkerProcesses>> start(const WorkerLaunch& launch,
                                                          FailureCallback on_failure);
    // stop(5) if not stopped yet.
    ~WorkerProcesses();

    // Worker pids by rank - 1.
    std::vector<pid_t> pids() const { return pids_; }
    // From now on workers may exit without that being a failure (call before telling them to).
    void expect_exits() { stopping_ = true; }
    // Waits up to timeout_seconds for every worker to exit (after rank 0 told them to), then
    // kills the rest. ok when every worker exited by itself with status 0; else an Unavailable
    // error naming each rank that did not (killed here, crashed, or exited with an error).
    Status stop(double timeout_seconds);

  private:
    WorkerProcesses() = default;
    void watch();
    void reap(size_t index, int status);

    FailureCallback on_failure_;
    std::vector<pid_t> pids_;
    std::vector<int> pidfds_;
    std::vector<bool> exited_;
    std::vector<int> statuses_;  // waitpid statuses of the exited workers
    int stop_event_fd_ = -1;
    std::atomic<bool> stopping_{false};
    std::thread watcher_;
    std::mutex mutex_;
};

// "exited with status 1", "was killed by signal 9 (Killed)".
std::string describe_exit_status(int status);

}  // namespace lmrun::parallel
