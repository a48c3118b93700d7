// Shared helpers for the test suite: where ../shared/testdata is, small loaders for the
// golden files there, scratch directories, the KV disk tier's files, running a command (the
// lmrun binary), and building a tokenizer component from its JSON.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace lmrun::testing {

// JSON that keeps its keys in the order written (schemas, tool definitions, request bodies):
// what a client sends, the way the server reads it (server::Json).
using Json = nlohmann::ordered_json;

// ../shared/testdata (override with LMRUN_TESTDATA).
std::string testdata_dir();
std::string testdata_path(const std::string& relative);
nlohmann::json read_json_file(const std::string& path);
std::vector<nlohmann::json> read_jsonl_file(const std::string& path);
// A fresh empty directory under the build tree, removed by nobody (tests are short-lived).
std::string make_temp_dir(const std::string& name);

// The KV disk tier's block files (*.kvb) directly in `dir`.
std::vector<std::filesystem::path> kv_block_files(const std::string& dir);

struct CommandResult {
    int exit_code = -1;  // -1 when the command could not start or did not exit normally
    std::string output;  // stdout and stderr together
};
// Runs `command` under /bin/sh with stderr joined to stdout and waits for it.
CommandResult run_shell_command(const std::string& command);

// `T::from_json` of the JSON text `json_text` (empty: JSON null), for a tokenizer component a
// test builds from its tokenizer.json section; a refusal is a test failure naming the error.
template <typename T>
T from_json_text(const std::string& json_text) {
    auto parsed = T::from_json(json_text.empty() ? nlohmann::json() : nlohmann::json::parse(json_text));
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
    return std::move(parsed).value();
}

}  // namespace lmrun::testing
