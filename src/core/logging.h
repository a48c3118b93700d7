// Concise logs on stderr: "lmrun INFO ...". LMRUN_LOG_LEVEL=debug|info|warn|error.
#pragma once

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace lmrun {

enum class LogLevel { Debug, Info, Warn, Error };

LogLevel log_level();
void set_log_level(LogLevel level);
// A tag after the level on every line of this process, e.g. "rank 1" for a tensor-parallel worker.
void set_log_tag(const std::string& tag);
void log_line(LogLevel level, const std::string& message);

template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::Info)
        log_line(LogLevel::Info, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::Warn)
        log_line(LogLevel::Warn, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
    log_line(LogLevel::Error, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
    if (log_level() <= LogLevel::Debug)
        log_line(LogLevel::Debug, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace lmrun
