#include "cli/serve_until_signal.h"

#include <atomic>
#include <thread>

#include <pthread.h>

#include "cli/exit_codes.h"
#include "core/logging.h"

namespace lmrun::cli {

sigset_t block_shutdown_signals(std::initializer_list<int> extra) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    for (int signal : extra) sigaddset(&signals, signal);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    return signals;
}

ServeOutcome serve_until_signal(const sigset_t& signals, const ServeWatch& watch) {
    ServeOutcome outcome;
    std::atomic<bool> serving{true};
    std::thread watcher([&] {
        const timespec poll = {0, 200'000'000};  // 200 ms
        while (serving) {
            const int signal = sigtimedwait(&signals, nullptr, &poll);
            if (watch.stopped_itself && watch.stopped_itself()) return;
            if (signal < 0) continue;
            if (signal != SIGINT && signal != SIGTERM) {
                if (watch.on_other_signal) watch.on_other_signal(signal);
                continue;
            }
            log_info("received {}: shutting down (in-flight requests have {} s to finish)",
                     signal == SIGINT ? "SIGINT" : "SIGTERM", watch.shutdown_timeout_seconds);
            outcome.drained = watch.shutdown(watch.shutdown_timeout_seconds);
            return;
        }
    });
    outcome.served = watch.serve();
    if (!outcome.served.ok()) {
        log_error("{}", outcome.served.error().message);
        watch.shutdown(0);
    }
    serving = false;
    watcher.join();
    return outcome;
}

int exit_code_after_serving(const Status& served, bool clean, const char* what, const char* unclean_reason) {
    if (!served.ok()) return exit_code_for(served.error());
    if (!clean) {
        log_warn("{} stopped: {}", what, unclean_reason);
        return kExitRuntime;
    }
    log_info("{} stopped", what);
    return kExitOk;
}

}  // namespace lmrun::cli
