// What the HTTP front ends (`lmrun serve`, `lmrun router`) share past their options'
// ranges (checked while parsing): the connection limit fitted to the process's open-file limit.
#pragma once

#include "core/result.h"

namespace lmrun::cli {

// The soft limit on open files is raised to the hard one (each connection is a socket); the
// connection limit must fit in it, with room for the model's files and the engine. A limit
// given on the command line that does not fit is an error; the default shrinks to fit.
Status fit_connections_to_file_limit(int& max_connections, bool given);

}  // namespace lmrun::cli
