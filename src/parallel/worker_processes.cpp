#include "parallel/worker_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>

#include <fmt/format.h>

#include "core/logging.h"
#include "parallel/multiproc_executor.h"
#include "parallel/worker_main.h"

extern char** environ;

namespace lmrun::parallel {
namespace {

// argv and envp of one worker, built before fork(): the child may only make system calls.
struct ExecImage {
    std::vector<std::string> args, env;
    std::vector<char*> argv, envp;
    cpu_set_t cpus;

    void finish() {
        for (std::string& arg : args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        for (std::string& entry : env) envp.push_back(entry.data());
        envp.push_back(nullptr);
    }
};

// Variables make_image() sets itself: not inherited from rank 0.
bool is_set_for_the_worker(const char* entry) {
    for (const char* name : {"OMP_NUM_THREADS=", "OMP_PLACES=", "OMP_PROC_BIND=", "LMRUN_TP_WORKER="})
        if (std::strncmp(entry, name, std::strlen(name)) == 0) return true;
    return false;
}

ExecImage make_image(const WorkerLaunch& launch, int rank) {
    const RankPlacement& placement = launch.placements[size_t(rank)];
    ExecImage image;
    image.args = worker_arguments(launch.executable, rank, launch.size, launch.group_fd, getpid());
    for (char** entry = environ; *entry; ++entry)
        if (!is_set_for_the_worker(*entry)) image.env.push_back(*entry);
    // The worker's OpenMP runtime reads these when it loads: its team on its own CPUs.
    std::string places;
    for (int cpu : placement.cpus) places += (places.empty() ? "{" : ",{") + std::to_string(cpu) + "}";
    image.env.push_back("OMP_NUM_THREADS=" + std::to_string(placement.num_threads));
    image.env.push_back("OMP_PLACES=" + places);
    image.env.push_back("OMP_PROC_BIND=close");
    image.env.push_back(std::string(kWorkerEnvironmentVariable) + "=1");
    CPU_ZERO(&image.cpus);
    for (int cpu : placement.cpus) CPU_SET(cpu, &image.cpus);
    image.finish();
    return image;
}

// In the child, between fork and exec: only async-signal-safe system calls.
[[noreturn]] void become_worker(const ExecImage& image, pid_t parent, int group_fd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);   // dies with the watcher thread, i.e. with rank 0
    if (getppid() != parent) _exit(1);  // rank 0 died before prctl took effect
    setpgid(0, 0);  // a terminal's Ctrl-C reaches rank 0, which shuts the workers down in order
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the server blocks SIGINT/SIGTERM in its threads
    sched_setaffinity(0, sizeof(image.cpus), &image.cpus);
    fcntl(group_fd, F_SETFD, 0);  // keep the group's shared memory across exec
    execve(image.argv[0], image.argv.data(), image.envp.data());
    _exit(127);
}

int open_pidfd(pid_t pid) {
    return int(syscall(SYS_pidfd_open, pid, 0));
}

}  // namespace

std::string describe_exit_status(int status) {
    if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return fmt::format("stopped (status {:#x})", status);
}

Result<std::unique_ptr<WorkerProcesses>> WorkerProcesses::start(const WorkerLaunch& launch,
                                                                FailureCallback on_failure) {
    std::vector<ExecImage> images;
    for (int rank = 1; rank < launch.size; ++rank) images.push_back(make_image(launch, rank));
    std::unique_ptr<WorkerProcesses> workers(new WorkerProcesses());
    workers->on_failure_ = std::move(on_failure);
    workers->stop_event_fd_ = eventfd(0, EFD_CLOEXEC);
    std::promise<std::string> started;  // "" or why a worker could not be started
    std::future<std::string> started_result = started.get_future();
    WorkerProcesses* self = workers.get();
    // The watcher forks the workers itself: PR_SET_PDEATHSIG follows the thread that forked.
    workers->watcher_ = std::thread([self, &images, &started, &launch] {
        const pid_t parent = getpid();
        std::string error;
        for (const ExecImage& image : images) {
            pid_t pid = fork();
            if (pid == 0) become_worker(image, parent, launch.group_fd);
            if (pid < 0) {
                error = fmt::format("cannot start a worker process: {}", std::strerror(errno));
                self->stopping_ = true;
                break;
            }
            std::lock_guard lock(self->mutex_);
            self->pids_.push_back(pid);
            self->pidfds_.push_back(open_pidfd(pid));
            self->exited_.push_back(false);
            self->statuses_.push_back(0);
        }
        started.set_value(error);  // start() returns: images and launch are gone from here on
        self->watch();
    });
    std::string error = started_result.get();
    if (!error.empty()) return make_error(ErrorKind::ResourceExhausted, "{}", error);
    return workers;
}

WorkerProcesses::~WorkerProcesses() {
    // A destructor has nobody to return it to: say it in the log.
    if (Status stopped = stop(5.0); !stopped.ok()) log_warn("{}", stopped.error().message);
    if (stop_event_fd_ >= 0) close(stop_event_fd_);
}

void WorkerProcesses::reap(size_t index, int status) {
    std::string reason;
    {
        std::lock_guard lock(mutex_);
        exited_[index] = true;
        statuses_[index] = status;
        if (pidfds_[index] >= 0) close(pidfds_[index]), pidfds_[index] = -1;
        reason = fmt::format("rank {} (pid {}) {}", index + 1, pids_[index], describe_exit_status(status));
    }
    if (!stopping_ && on_failure_) on_failure_(reason);
}

// Until every worker exited: a pidfd turns readable when its process exits (without pidfds,
// poll every 100 ms). stop() writes the event to end the wait early. Allocation-free once
// running (the engine's decode steps are checked not to allocate, in any thread).
void WorkerProcesses::watch() {
    std::vector<pollfd> fds;
    fds.reserve(pids_.size() + 1);
    for (;;) {
        fds.clear();
        bool all_pidfds = true;
        {
            std::lock_guard lock(mutex_);
            for (size_t i = 0; i < pids_.size(); ++i) {
                if (exited_[i]) continue;
                if (pidfds_[i] < 0)
                    all_pidfds = false;
                else
                    fds.push_back({pidfds_[i], POLLIN, 0});
            }
            if (std::find(exited_.begin(), exited_.end(), false) == exited_.end()) return;
        }
        fds.push_back({stop_event_fd_, POLLIN, 0});
        poll(fds.data(), fds.size(), all_pidfds ? 1000 : 100);
        for (size_t i = 0; i < pids_.size(); ++i) {
            if (exited_[i]) continue;
            int status = 0;
            if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) reap(i, status);
        }
    }
}

Status WorkerProcesses::stop(double timeout_seconds) {
    stopping_ = true;
    if (!watcher_.joinable()) return ok_status();
    auto all_exited = [&] {
        std::lock_guard lock(mutex_);
        return std::find(exited_.begin(), exited_.end(), false) == exited_.end();
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
    while (!all_exited() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::string unclean;  // "rank 1 (pid 12) was killed after 5 s; ..."
    {
        std::lock_guard lock(mutex_);
        for (size_t i = 0; i < pids_.size(); ++i) {
            std::string how;
            if (!exited_[i]) {
                kill(pids_[i], SIGKILL);
                how = fmt::format("did not exit within {} s and was killed", timeout_seconds);
            } else if (!WIFEXITED(statuses_[i]) || WEXITSTATUS(statuses_[i]) != 0) {
                how = describe_exit_status(statuses_[i]);
            }
            if (!how.empty())
                unclean +=
                    fmt::format("{}rank {} (pid {}) {}", unclean.empty() ? "" : "; ", i + 1, pids_[i], how);
        }
    }
    uint64_t one = 1;
    if (write(stop_event_fd_, &one, sizeof(one)) < 0) {
        // The watcher also polls with a timeout; nothing else to do.
    }
    watcher_.join();
    if (unclean.empty()) return ok_status();
    return make_error(ErrorKind::Unavailable, "tensor-parallel workers did not stop cleanly: {}", unclean);
}

}  // namespace lmrun::parallel
