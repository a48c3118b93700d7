// The workers a router sends to: URLs given on the command line (--worker, repeatable) or
// in a file (--worker-file: one URL per line, blank lines and lines starting with '#'
// ignored), re-read on SIGHUP. A URL is http://host:port or https://host:port, without a
// path; a trailing '/' is dropped.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace lmrun::router {

// The URL normalized, or an error naming it and `source` (the option or file:line).
Result<std::string> parse_worker_url(const std::string& text, const std::string& source);
Result<std::vector<std::string>> parse_worker_list(const std::string& text, const std::string& file_name);
Result<std::vector<std::string>> read_worker_file(const std::string& path);

}  // namespace lmrun::router
