// ReplicaSet with stand-in replicas (sh scripts that log a "listening on" line as
// `lmrun serve` does): addresses read from their logs, pinning, restart of a replica that
// dies, a replica that fails to start, and stop's exit codes.
#include "router/replica_set.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

// A replica that logs its port (given as "--port P"; P = 0 becomes 40000 + its index),
// then waits for SIGTERM and exits with `exit_code`.
ReplicaSpec fake_replica(int index, int exit_code = 0, std::vector<int> cpus = {}) {
    // The trap is set before the "listening" line, as serve handles SIGTERM before it logs it.
    const std::string script =
        "trap 'exit " + std::to_string(exit_code) +
        "' TERM; port=$2; [ \"$port\" = 0 ] && port=" + std::to_string(40000 + index) +
        "; echo \"lmrun INFO hello\" >&2; echo \"lmrun INFO listening on http://127.0.0.1:$port\" >&2; "
        "while true; do sleep 0.05; done";
    return ReplicaSpec{{"-c", script, "sh", "--port", "0"}, std::move(cpus)};
}

ReplicaSetOptions sh_options() {
    ReplicaSetOptions options;
    options.executable = "/bin/sh";
    options.start_timeout_seconds = 10;
    options.restart_delay_seconds = 0.05;
    return options;
}

TEST(ReplicaSet, StartsEveryReplicaAndReadsItsAddressFromItsLog) {
    ReplicaSet replicas(sh_options(), {fake_replica(0, 0, {0}), fake_replica(1)});
    auto urls = replicas.start();
    ASSERT_TRUE(urls.ok()) << urls.error().message;
    EXPECT_EQ(*urls, (std::vector<std::string>{"http://127.0.0.1:40000", "http://127.0.0.1:40001"}));
    const std::vector<pid_t> pids = replicas.pids();
    ASSERT_EQ(pids.size(), 2u);
    // The first is pinned to CPU 0 (its affinity is inherited by what it runs).
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(pids[0], sizeof(set), &set), 0);
    EXPECT_EQ(CPU_COUNT(&set), 1);
    EXPECT_TRUE(CPU_ISSET(0, &set));
    EXPECT_TRUE(replicas.stop(5));
    EXPECT_EQ(kill(pids[0], 0), -1);  // reaped
}

TEST(ReplicaSet, AReplicaThatDiesIsStartedAgainOnItsPort) {
    ReplicaSet replicas(sh_options(), {fake_replica(0), fake_replica(1)});
    ASSERT_TRUE(replicas.start().ok());
    const pid_t first = replicas.pids()[1];
    ASSERT_EQ(kill(first, SIGKILL), 0);
    pid_t second = -1;
    for (int i = 0; i < 200 && (second <= 0 || second == first); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        second = replicas.pids()[1];
    }
    EXPECT_GT(second, 0);
    EXPECT_NE(second, first);
    EXPECT_EQ(replicas.num_restarts(), 1);
    // Started again with the port it had: "--port 40001", not 0 (which would give 40001 too
    // here, so look at its command line).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    FILE* cmdline = fopen(("/proc/" + std::to_string(second) + "/cmdline").c_str(), "r");
    ASSERT_NE(cmdline, nullptr);
    char bytes[4096] = {};
    const size_t n = fread(bytes, 1, sizeof(bytes) - 1, cmdline);
    fclose(cmdline);
    const std::string text(bytes, n);
    EXPECT_NE(text.find(std::string("--port\0"
                                    "40001",
                                    13)),
              std::string::npos);
    EXPECT_TRUE(replicas.stop(5));
}

TEST(ReplicaSet, AReplicaThatExitsBeforeItIsReadyFailsTheStartWithItsLog) {
    ReplicaSpec broken{{"-c", "echo 'lmrun ERROR no such model' >&2; exit 2"}, {}};
    ReplicaSet replicas(sh_options(), {fake_replica(0), broken});
    auto urls = replicas.start();
    ASSERT_FALSE(urls.ok());
    EXPECT_NE(urls.error().message.find("replica 1 exited before it was ready"), std::string::npos)
        << urls.error().message;
    EXPECT_NE(urls.error().message.find("no such model"), std::string::npos);
    for (pid_t pid : replicas.pids()) EXPECT_EQ(pid, -1);  // the healthy one was stopped too
}

TEST(ReplicaSet, StopTellsWhetherEveryReplicaExitedCleanly) {
    ReplicaSet replicas(sh_options(), {fake_replica(0), fake_replica(1, 4)});
    ASSERT_TRUE(replicas.start().ok());
    EXPECT_FALSE(replicas.stop(5));
}

}  // namespace
}  // namespace lmrun::router
