#include "router/replica_set.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>

#include "core/logging.h"

namespace lmrun::router {

using Clock = std::chrono::steady_clock;

struct ReplicaSet::Replica {
    int index = 0;
    ReplicaSpec spec;
    pid_t pid = -1;  // -1: not running
    int port = 0;    // 0 until it first logged its address
    bool log_ended = true;
    std::thread reader;
    std::deque<std::string> recent;  // its last log lines, for errors
    int exit_status = 0;             // of its last exit (waitpid's status)
    Clock::time_point restart_at{};
};

namespace {

constexpr size_t kRecentLines = 8;

std::string describe_exit(int status) {
    if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status));
    return "stopped";
}

void set_port_argument(std::vector<std::string>& arguments, int port) {
    for (size_t i = 0; i + 1 < arguments.size(); ++i)
        if (arguments[i] == "--port") arguments[i + 1] = std::to_string(port);
}

}  // namespace

ReplicaSet::ReplicaSet(ReplicaSetOptions options, std::vector<ReplicaSpec> specs)
    : options_(std::move(options)) {
    for (size_t i = 0; i < specs.size(); ++i) {
        auto replica = std::make_unique<Replica>();
        replica->index = int(i);
        replica->spec = std::move(specs[i]);
        replicas_.push_back(std::move(replica));
    }
}

ReplicaSet::~ReplicaSet() {
    stop(0);
}

Status ReplicaSet::spawn(Replica& replica) {
    if (replica.reader.joinable()) replica.reader.join();  // the last run's log (its pipe is closed)
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return make_error("replica {}: pipe: {}", replica.index, strerror(errno));
    // Everything the child needs is built before fork(): after it, only async-signal-safe calls.
    std::vector<std::string> arguments = replica.spec.arguments;
    arguments.insert(arguments.begin(), options_.executable);
    std::vector<char*> argv;
    argv.reserve(arguments.size() + 1);
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu : replica.spec.cpus) CPU_SET(cpu, &cpus);
    const bool pin = !replica.spec.cpus.empty();
    const pid_t parent = getpid();
    sigset_t no_signals;
    sigemptyset(&no_signals);

    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return make_error("replica {}: fork: {}", replica.index, strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);  // the parent died before prctl
        sigprocmask(SIG_SETMASK, &no_signals, nullptr);
        signal(SIGPIPE, SIG_DFL);
        if (pin) sched_setaffinity(0, sizeof(cpus), &cpus);
        dup2(fds[1], STDERR_FILENO);  // dup2 clears O_CLOEXEC on the copy
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(fds[1]);
    {
        std::lock_guard lock(mutex_);
        replica.pid = pid;
        replica.log_ended = false;
    }
    replica.reader = std::thread([this, &replica, fd = fds[0]] { read_log(replica, fd); });
    return ok_status();
}

void ReplicaSet::read_log(Replica& replica, int fd) {
    static const std::regex kListening(R"(listening on http://[^\s:]+:(\d+))");
    FILE* in = fdopen(fd, "r");
    if (!in) {
        close(fd);
    } else {
        char* line = nullptr;
        size_t capacity = 0;
        ssize_t length = 0;
        while ((length = getline(&line, &capacity, in)) > 0) {
            std::string text(line, size_t(length));
            if (!text.empty() && text.back() == '\n') text.pop_back();
            std::smatch match;
            if (std::regex_search(text, match, kListening)) {
                std::lock_guard lock(mutex_);
                log_info("replica {} (pid {}, {} cpus) is ready on http://127.0.0.1:{}", replica.index,
                         replica.pid, replica.spec.cpus.size(), match[1].str());
                replica.port = std::stoi(match[1].str());
                changed_.notify_all();
                continue;
            }
            std::fprintf(stderr, "replica %d: %s\n", replica.index, text.c_str());
            std::lock_guard lock(mutex_);
            replica.recent.push_back(std::move(text));
            if (replica.recent.size() > kRecentLines) replica.recent.pop_front();
        }
        std::free(line);
        std::fclose(in);
    }
    std::lock_guard lock(mutex_);
    replica.log_ended = true;
    changed_.notify_all();
}

std::string ReplicaSet::last_lines(const Replica& replica) const {
    std::string text;
    for (const std::string& line : replica.recent) text += "\n  " + line;
    return text;
}

Result<std::vector<std::string>> ReplicaSet::start() {
    for (auto& replica : replicas_) {
        if (Status spawned = spawn(*replica); !spawned.ok()) {
            stop(0);
            return spawned.error();
        }
    }
    const auto deadline = Clock::now() + std::chrono::duration<double>(options_.start_timeout_seconds);
    std::vector<std::string> urls;
    for (auto& replica : replicas_) {
        std::unique_lock lock(mutex_);
        changed_.wait_until(lock, deadline, [&] { return replica->port != 0 || replica->log_ended; });
        if (replica->port == 0) {
            const std::string why =
                replica->log_ended ? "exited before it was ready" : "was not ready in time";
            const std::string log = last_lines(*replica);
            lock.unlock();
            stop(0);
            return make_error(ErrorKind::Unavailable, "replica {} {}; its last lines:{}", replica->index, why,
                              log);
        }
        set_port_argument(replica->spec.arguments, replica->port);
        urls.push_back("http://127.0.0.1:" + std::to_string(replica->port));
    }
    supervisor_ = std::thread([this] { supervise(); });
    return urls;
}

// Reaps replicas that exit while the set runs, and starts them again after the delay.
void ReplicaSet::supervise() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        changed_.wait_for(lock, std::chrono::milliseconds(100));
        if (stopping_) break;
        for (auto& replica : replicas_) {
            if (replica->pid > 0) {
                int status = 0;
                if (waitpid(replica->pid, &status, WNOHANG) != replica->pid) continue;
                log_warn("replica {} (pid {}) {}: starting it again in {} s", replica->index, replica->pid,
                         describe_exit(status), options_.restart_delay_seconds);
                replica->pid = -1;
                replica->exit_status = status;
                replica->restart_at =
                    Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(options_.restart_delay_seconds));
            } else if (Clock::now() >= replica->restart_at) {
                ++num_restarts_;
                lock.unlock();
                const Status spawned = spawn(*replica);
                lock.lock();
                if (!spawned.ok()) {
                    log_error("{}", spawned.error().message);
                    replica->restart_at = Clock::now() + std::chrono::seconds(5);
                }
            }
        }
    }
}

bool ReplicaSet::stop(double timeout_seconds) {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        changed_.notify_all();
    }
    if (supervisor_.joinable()) supervisor_.join();
    for (auto& replica : replicas_)
        if (replica->pid > 0) kill(replica->pid, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
    bool all_ok = true;
    for (auto& replica : replicas_) {
        if (replica->pid <= 0) {
            all_ok = all_ok && replica->exit_status == 0;
            continue;
        }
        int status = 0;
        while (waitpid(replica->pid, &status, WNOHANG) == 0) {
            if (Clock::now() >= deadline) {
                log_warn("replica {} (pid {}) did not stop in time: killed", replica->index, replica->pid);
                kill(replica->pid, SIGKILL);
                waitpid(replica->pid, &status, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        all_ok = all_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        std::lock_guard lock(mutex_);
        replica->pid = -1;
        replica->exit_status = status;
    }
    for (auto& replica : replicas_)
        if (replica->reader.joinable()) replica->reader.join();
    return all_ok;
}

std::vector<pid_t> ReplicaSet::pids() const {
    std::lock_guard lock(mutex_);
    std::vector<pid_t> pids;
    pids.reserve(replicas_.size());
    for (const auto& replica : replicas_) pids.push_back(replica->pid);
    return pids;
}

int64_t ReplicaSet::num_restarts() const {
    std::lock_guard lock(mutex_);
    return num_restarts_;
}

}  // namespace lmrun::router
