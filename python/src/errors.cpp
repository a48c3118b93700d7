#include "errors.h"

namespace lmrun::python {

PyObject* python_exception_type(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidArgument:
        case ErrorKind::ResourceExhausted:  // a prompt or request larger than the limits allow
            return PyExc_ValueError;
        case ErrorKind::NotFound:
            return PyExc_FileNotFoundError;
        case ErrorKind::Corrupt:
            return PyExc_OSError;
        case ErrorKind::Unsupported:
        case ErrorKind::Unavailable:
        case ErrorKind::Internal:
            return PyExc_RuntimeError;
    }
    return PyExc_RuntimeError;
}

void register_error_translator() {
    pybind11::register_exception_translator([](std::exception_ptr pointer) {
        try {
            if (pointer) std::rethrow_exception(pointer);
        } catch (const EngineError& error) {
            PyErr_SetString(python_exception_type(error.error().kind), error.error().message.c_str());
        }
    });
}

}  // namespace lmrun::python
