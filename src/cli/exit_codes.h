// Exit codes of the `lmrun` command (documented in the README), one per kind of failure:
//   0 success; 1 bad input or usage (an option, a prompt, a parameter);
//   2 a model, checkpoint, tokenizer or template problem (missing, unsupported, corrupt file);
//   3 not enough resources (memory, limits); 4 a failure at run time (a rank died, an internal error).
#pragma once

#include "core/result.h"

namespace lmrun::cli {

enum ExitCode : int {
    kExitOk = 0,
    kExitUsage = 1,
    kExitModel = 2,
    kExitResources = 3,
    kExitRuntime = 4,
};

inline int exit_code_for(const Error& error) {
    switch (error.kind) {
        case ErrorKind::InvalidArgument:
            return kExitUsage;
        case ErrorKind::NotFound:
        case ErrorKind::Unsupported:
        case ErrorKind::Corrupt:
            return kExitModel;
        case ErrorKind::ResourceExhausted:
            return kExitResources;
        case ErrorKind::Unavailable:
        case ErrorKind::Internal:
            return kExitRuntime;
    }
    return kExitRuntime;
}

}  // namespace lmrun::cli
