#include "core/result.h"

namespace lmrun {

const char* error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidArgument:
            return "invalid_argument";
        case ErrorKind::NotFound:
            return "not_found";
        case ErrorKind::Unsupported:
            return "unsupported";
        case ErrorKind::Corrupt:
            return "corrupt";
        case ErrorKind::ResourceExhausted:
            return "resource_exhausted";
        case ErrorKind::Unavailable:
            return "unavailable";
        case ErrorKind::Internal:
            return "internal";
    }
    return "internal";
}

}  // namespace lmrun
