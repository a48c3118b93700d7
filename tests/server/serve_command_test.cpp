// `lmrun serve` refuses bad numeric options with one line naming the option and exit
// code 1 (cli/exit_codes.h), before it loads anything; before this, --http-threads 0
// or -1 started a server that never answered.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "test_util.h"

namespace lmrun::testing {
namespace {

struct CommandResult {
    int exit_code = -1;
    std::string output;
};

CommandResult run_serve(const std::string& arguments) {
    // `timeout`: an option that were accepted by mistake would start a server that never exits.
    const std::string port = arguments.find("--port") == std::string::npos ? " --port 0 " : " ";
    const std::string command = "timeout 60 " + std::string(LMRUN_BINARY_DIR) + "/lmrun serve --model " +
                                testdata_path("stories260k") + port + arguments + " 2>&1";
    CommandResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return result;
    std::array<char, 4096> buffer;
    size_t count;
    while ((count = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
        result.output.append(buffer.data(), count);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

TEST(ServeCommand, BadNumericOptionsAreAOneLineUsageError) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--http-threads 0", "--http-threads must be in [1, 1024], got 0"},
        {"--http-threads -1", "--http-threads must be in [1, 1024], got -1"},
        {"--max-connections 0", "--max-connections must be in [1, 1048576], got 0"},
        {"--max-request-body-mb 0", "--max-request-body-mb must be in [1, 4096], got 0"},
        {"--max-request-body-mb -64", "--max-request-body-mb must be in [1, 4096], got -64"},
        {"--shutdown-timeout -1", "--shutdown-timeout must be in [0, 86400], got -1"},
        {"--shutdown-timeout nan", "--shutdown-timeout must be in [0, 86400], got nan"},
        {"--request-timeout 0", "--request-timeout must be in [0.1, 86400], got 0"},
        {"--request-timeout inf", "--request-timeout must be in [0.1, 86400], got inf"},
        {"--idle-timeout 0", "--idle-timeout must be in [1, 86400], got 0"},
        {"--max-queued-requests -1", "--max-queued-requests must be in [0, 1048576], got -1"},
        {"--port 70000", "--port must be in [0, 65535], got 70000"},
    };
    for (const auto& [arguments, message] : cases) {
        CommandResult result = run_serve(arguments);
        EXPECT_EQ(result.exit_code, 1) << arguments << ": " << result.output;
        EXPECT_EQ(result.output, "lmrun ERROR " + message + "\n") << arguments;
    }
}

}  // namespace
}  // namespace lmrun::testing
