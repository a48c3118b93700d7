// Shared helpers for the test suite: where ../shared/testdata is, and small
// loaders for the golden files there.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmrun::testing {

// ../shared/testdata (override with LMRUN_TESTDATA).
std::string testdata_dir();
std::string testdata_path(const std::string& relative);
nlohmann::json read_json_file(const std::string& path);
std::vector<nlohmann::json> read_jsonl_file(const std::string& path);
// A fresh empty directory under the build tree, removed by nobody (tests are short-lived).
std::string make_temp_dir(const std::string& name);

}  // namespace lmrun::testing
