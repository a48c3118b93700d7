// How `lmrun serve`, `serve --data-parallel-size` and `lmrun router` run until a signal:
// SIGINT, SIGTERM (and whatever else a command takes, e.g. the router's SIGHUP) are blocked
// in every thread and taken by one watcher thread, where a shutdown may block, while the
// server's serve() runs on the calling thread. SIGINT/SIGTERM drain the server within the
// command's --shutdown-timeout.
#pragma once

#include <csignal>
#include <functional>
#include <initializer_list>

#include "core/result.h"

namespace lmrun::cli {

// Blocks SIGINT, SIGTERM and `extra` in this thread; call it before any thread starts, so that
// every thread inherits the mask. Also ignores SIGPIPE: a client that hangs up is a failed
// write, not a crash. Returns the blocked set, for serve_until_signal().
sigset_t block_shutdown_signals(std::initializer_list<int> extra = {});

struct ServeWatch {
    std::function<Status()> serve;  // blocks until the server stopped
    // Drains within the timeout; true when every request in flight finished by then.
    std::function<bool(double timeout_seconds)> shutdown;
    double shutdown_timeout_seconds = 30;
    // Optional, checked every 200 ms: true when it found the server unable to go on and stopped
    // it itself (serve's failed engine).
    std::function<bool()> stopped_itself;
    // Optional: a blocked signal other than SIGINT/SIGTERM was taken (the router's SIGHUP).
    std::function<void(int signal)> on_other_signal;
};

struct ServeOutcome {
    Status served;        // serve()'s
    bool drained = true;  // false when requests were cut off at the shutdown deadline
};

// Runs watch.serve on this thread while a watcher thread takes `signals`: SIGINT/SIGTERM are
// logged and drain the server (shutdown with the timeout). When serve() fails, the failure is
// logged and the server shut down at once. Returns once serve() returned and the watcher ended.
ServeOutcome serve_until_signal(const sigset_t& signals, const ServeWatch& watch);

// The exit code once serving ended: serve()'s failure's; 4 (kExitRuntime) when `clean` is false,
// after "<what> stopped: <unclean_reason>"; else 0 after "<what> stopped".
int exit_code_after_serving(const Status& served, bool clean, const char* what, const char* unclean_reason);

}  // namespace lmrun::cli
