#include "test_util.h"

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace lmrun::testing {

std::string testdata_dir() {
    const char* from_env = std::getenv("LMRUN_TESTDATA");
    return from_env ? from_env : LMRUN_TESTDATA_DIR;
}

std::string testdata_path(const std::string& relative) {
    return testdata_dir() + "/" + relative;
}

nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> read_jsonl_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<nlohmann::json> records;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) records.push_back(nlohmann::json::parse(line));
    }
    return records;
}

std::string make_temp_dir(const std::string& name) {
    std::filesystem::path dir =
        std::filesystem::path(LMRUN_BINARY_DIR) / "test_tmp" / (name + "_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

}  // namespace lmrun::testing
