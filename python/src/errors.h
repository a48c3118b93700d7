// How the engine's errors reach Python: an lmrun Error becomes a Python exception whose type
// follows the Error's kind (ValueError for input the caller can fix, FileNotFoundError/OSError
// for files, RuntimeError for the rest) and whose text is the engine's message.
#pragma once

#include <stdexcept>

#include <pybind11/pybind11.h>

#include "core/result.h"

namespace lmrun::python {

// Carries an lmrun Error through C++ code that runs with or without the GIL.
class EngineError : public std::runtime_error {
  public:
    explicit EngineError(Error error) : std::runtime_error(error.message), error_(std::move(error)) {}
    const Error& error() const { return error_; }

  private:
    Error error_;
};

// The Python exception type an ErrorKind maps to.
PyObject* python_exception_type(ErrorKind kind);

// Registers the EngineError -> Python exception translation on the module.
void register_error_translator();

template <typename T>
T value_or_throw(Result<T> result) {
    if (!result.ok()) throw EngineError(result.error());
    return std::move(result).value();
}

inline void throw_if_error(const Status& status) {
    if (!status.ok()) throw EngineError(status.error());
}

}  // namespace lmrun::python
