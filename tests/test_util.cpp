#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
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

std::vector<std::filesystem::path> kv_block_files(const std::string& dir) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".kvb") files.push_back(entry.path());
    return files;
}

CommandResult run_shell_command(const std::string& command) {
    const std::string joined = command + " 2>&1";
    CommandResult result;
    FILE* pipe = popen(joined.c_str(), "r");
    if (!pipe) return result;
    std::array<char, 4096> buffer;
    size_t count;
    while ((count = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
        result.output.append(buffer.data(), count);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

}  // namespace lmrun::testing
