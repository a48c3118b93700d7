#include "core/logging.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace lmrun {
namespace {

LogLevel level_from_env() {
    const char* text = std::getenv("LMRUN_LOG_LEVEL");
    if (!text) return LogLevel::Info;
    if (std::strcmp(text, "debug") == 0) return LogLevel::Debug;
    if (std::strcmp(text, "warn") == 0) return LogLevel::Warn;
    if (std::strcmp(text, "error") == 0) return LogLevel::Error;
    return LogLevel::Info;
}

std::atomic<LogLevel>& level_storage() {
    static std::atomic<LogLevel> level{level_from_env()};
    return level;
}

}  // namespace

LogLevel log_level() {
    return level_storage().load(std::memory_order_relaxed);
}
void set_log_level(LogLevel level) {
    level_storage().store(level);
}

static std::string& log_tag() {
    static std::string tag;
    return tag;
}

void set_log_tag(const std::string& tag) {
    log_tag() = "[" + tag + "] ";
}

void log_line(LogLevel level, const std::string& message) {
    static std::mutex mutex;
    const char* tag = level == LogLevel::Debug  ? "DEBUG"
                      : level == LogLevel::Info ? "INFO"
                      : level == LogLevel::Warn ? "WARN"
                                                : "ERROR";
    std::lock_guard<std::mutex> lock(mutex);
    // Written by size: a message quoting request text may hold a NUL, and nothing after it may be lost.
    std::fprintf(stderr, "lmrun %s %s", tag, log_tag().c_str());
    std::fwrite(message.data(), 1, message.size(), stderr);
    std::fputc('\n', stderr);
}

}  // namespace lmrun
