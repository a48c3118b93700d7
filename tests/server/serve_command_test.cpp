// `lmrun serve` refuses bad numeric options with one line naming the option and exit
// code 1 (cli/exit_codes.h), while parsing, before it loads anything; before this,
// --http-threads 0 or -1 started a server that never answered (issue 10, item 13).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "test_util.h"

namespace lmrun::testing {
namespace {

CommandResult run_serve(const std::string& arguments) {
    // `timeout`: an option that were accepted by mistake would start a server that never exits.
    const std::string port = arguments.find("--port") == std::string::npos ? " --port 0 " : " ";
    const std::string command = "timeout 60 " + std::string(LMRUN_BINARY_DIR) + "/lmrun serve --model " +
                                testdata_path("stories260k") + port + arguments;
    return run_shell_command(command);
}

TEST(ServeCommand, BadNumericOptionsAreAOneLineUsageError) {
    // The same validators as every other subcommand's options (cli/cli_options.h).
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--http-threads 0", "--http-threads: 0 is not an integer in [1, 1024]"},
        {"--http-threads -1", "--http-threads: -1 is not an integer in [1, 1024]"},
        {"--http-threads 1.5", "--http-threads: 1.5 is not an integer in [1, 1024]"},
        {"--max-connections 0", "--max-connections: 0 is not an integer in [1, 1048576]"},
        {"--max-request-body-mb 0", "--max-request-body-mb: 0 is not an integer in [1, 4096]"},
        {"--max-request-body-mb -64", "--max-request-body-mb: -64 is not an integer in [1, 4096]"},
        {"--shutdown-timeout -1", "--shutdown-timeout: -1 is not a finite number in [0, 86400]"},
        {"--shutdown-timeout nan", "--shutdown-timeout: nan is not a finite number in [0, 86400]"},
        {"--request-timeout 0", "--request-timeout: 0 is not a finite number in [0.1, 86400]"},
        {"--request-timeout inf", "--request-timeout: inf is not a finite number in [0.1, 86400]"},
        {"--idle-timeout 0", "--idle-timeout: 0 is not an integer in [1, 86400]"},
        {"--max-queued-requests -1", "--max-queued-requests: -1 is not an integer in [0, 1048576]"},
        {"--port 70000", "--port: 70000 is not an integer in [0, 65535]"},
        {"--kv-cache-memory -1", "--kv-cache-memory: -1 is not a finite number in [0, 1048576]"},
        {"--engine-seed -1", "--engine-seed: -1 is not an integer in [0, 18446744073709551615]"},
        {"--kv-offload-size 0", "--kv-offload-size: 0 is not a finite number in [0.0001, 1048576]"},
        {"--kv-offload-size nan", "--kv-offload-size: nan is not a finite number in [0.0001, 1048576]"},
    };
    for (const auto& [arguments, message] : cases) {
        CommandResult result = run_serve(arguments);
        EXPECT_EQ(result.exit_code, 1) << arguments << ": " << result.output;
        EXPECT_EQ(result.output, "lmrun: " + message + " (see --help)\n") << arguments;
    }
}

TEST(ServeCommand, BadKvOffloadDirIsAUsageErrorNamingIt) {
    // Checked when the engine starts (the directory is created if only its last part is missing).
    const std::string dir = make_temp_dir("serve_bad_kv_offload_dir");
    for (const std::string& bad : {dir + "/missing/parent", std::string("/proc/version")}) {
        CommandResult result = run_serve("--kv-offload-dir " + bad);
        EXPECT_EQ(result.exit_code, 1) << bad << ": " << result.output;
        EXPECT_NE(result.output.find("--kv-offload-dir " + bad + ": "), std::string::npos) << result.output;
    }
}

}  // namespace
}  // namespace lmrun::testing
