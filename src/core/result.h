// Errors as values at the library's boundaries (user input, files, requests).
// A Result<T> holds either a T or an Error: what went wrong (its kind), a message that
// names the file or field at fault, and that file or field on its own (`subject`).
// The kind is what the edges map: the server to an HTTP status and OpenAI error type
// (server/api_error.h), the CLI to an exit code (cli/exit_codes.h). Internal invariants
// use LMRUN_CHECK (check.h) instead.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace lmrun {

enum class ErrorKind {
    InvalidArgument,    // a request, option or parameter the caller can fix
    NotFound,           // a file or resource that does not exist
    Unsupported,        // well-formed, but not something lmrun can run (architecture, dtype, scheme)
    Corrupt,            // a file that is malformed or lies about its contents
    ResourceExhausted,  // more memory, tokens or nesting than the limits allow
    Unavailable,        // the engine cannot take it now (shutting down, a rank failed)
    Internal,           // a bug or an unexpected failure of the system
};

struct Error {
    std::string message;
    ErrorKind kind = ErrorKind::InvalidArgument;
    std::string subject;  // the file or request field at fault, "" when none
};

const char* error_kind_name(ErrorKind kind);

template <typename... Args>
Error make_error(fmt::format_string<Args...> format, Args&&... args) {
    return Error{fmt::format(format, std::forward<Args>(args)...), ErrorKind::InvalidArgument, {}};
}

template <typename... Args>
Error make_error(ErrorKind kind, fmt::format_string<Args...> format, Args&&... args) {
    return Error{fmt::format(format, std::forward<Args>(args)...), kind, {}};
}

// The same error, naming what it concerns (a file path or a request field).
inline Error with_subject(Error error, std::string subject) {
    error.subject = std::move(subject);
    return error;
}

// An error about `subject` (a file path or a request field), which the message names too.
template <typename... Args>
Error make_error_about(std::string subject, ErrorKind kind, fmt::format_string<Args...> format,
                       Args&&... args) {
    return with_subject(make_error(kind, format, std::forward<Args>(args)...), std::move(subject));
}

template <typename T>
class [[nodiscard]] Result {
  public:
    Result(T value) : storage_(std::move(value)) {}
    Result(Error error) : storage_(std::move(error)) {}

    bool ok() const { return std::holds_alternative<T>(storage_); }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<T>(storage_); }
    const T& value() const& { return std::get<T>(storage_); }
    T&& value() && { return std::get<T>(std::move(storage_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() { return value(); }

    const Error& error() const { return std::get<Error>(storage_); }

  private:
    std::variant<T, Error> storage_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), ok_(false) {}

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const { return error_; }

  private:
    Error error_;
    bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() {
    return Status();
}

}  // namespace lmrun

// Propagates the error of a Result-returning expression; binds its value otherwise.
#define LMRUN_CONCAT_INNER(a, b) a##b
#define LMRUN_CONCAT(a, b) LMRUN_CONCAT_INNER(a, b)
#define LMRUN_ASSIGN_OR_RETURN(lhs, expr) \
    LMRUN_ASSIGN_OR_RETURN_IMPL(LMRUN_CONCAT(result_, __LINE__), lhs, expr)
// tmp names the variable being declared and lhs may be a declaration ("Config config"):
// neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define LMRUN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
    auto tmp = (expr);                              \
    if (!tmp.ok()) return tmp.error();              \
    lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
#define LMRUN_RETURN_IF_ERROR(expr)                \
    do {                                           \
        auto&& status_ = (expr);                   \
        if (!status_.ok()) return status_.error(); \
    } while (0)
