// The lmrun command as a user runs it: generate prints the golden story, bad
// input gets a clear message and a non-zero exit code (the router's and --data-parallel-size's
// options too), every subcommand has --help.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "test_util.h"

namespace lmrun::testing {
namespace {

struct CommandResult {
    int exit_code = -1;
    std::string output;  // stdout and stderr together
};

CommandResult run_lmrun(const std::string& arguments) {
    std::string command = std::string(LMRUN_BINARY_DIR) + "/lmrun " + arguments + " 2>&1";
    CommandResult result;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return result;
    std::array<char, 4096> buffer;
    size_t count;
    while ((count = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
        result.output.append(buffer.data(), count);
    int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

std::string stories_dir() {
    return testdata_path("stories260k");
}

TEST(Cli, GenerateFromPromptIdsPrintsTheGoldenStory) {
    nlohmann::json expected = read_json_file(testdata_path("stories260k/expected.json"));
    const auto& golden = expected["cases"][0];  // bos_only_200, llama2.c's own test
    CommandResult result =
        run_lmrun("generate --model " + stories_dir() +
                  " --prompt-ids 1 --max-tokens 200 --temperature 0 --no-progress --threads 1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find(golden["runc_stdout"].get<std::string>() + "\n"), std::string::npos)
        << result.output;
}

TEST(Cli, GenerateFromTextWithJsonOutput) {
    CommandResult result = run_lmrun("generate --model " + stories_dir() +
                                     " --prompt \"Once upon a time\" --max-tokens 5 --temperature 0 --json "
                                     "--no-progress --threads 1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    size_t start = result.output.find("{\"");
    ASSERT_NE(start, std::string::npos) << result.output;
    nlohmann::json record =
        nlohmann::json::parse(result.output.substr(start, result.output.find('\n', start) - start));
    EXPECT_EQ(record["token_ids"], nlohmann::json({432, 383, 286, 261, 376}));  // prompt1's golden start
    EXPECT_EQ(record["text"], ", there was a little");
    EXPECT_EQ(record["finish_reason"], "length");
}

TEST(Cli, BadInputGetsAClearErrorAndExitCode) {
    CommandResult missing = run_lmrun("generate --model /nonexistent/model --prompt-ids 1");
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_NE(missing.output.find("/nonexistent/model"), std::string::npos) << missing.output;

    CommandResult bad_ids = run_lmrun("generate --model " + stories_dir() + " --prompt-ids 1,x,3");
    EXPECT_NE(bad_ids.exit_code, 0);
    EXPECT_NE(bad_ids.output.find("--prompt-ids"), std::string::npos) << bad_ids.output;

    CommandResult bad_temperature =
        run_lmrun("generate --model " + stories_dir() + " --prompt-ids 1 --temperature -1");
    EXPECT_NE(bad_temperature.exit_code, 0);
    EXPECT_NE(bad_temperature.output.find("temperature"), std::string::npos) << bad_temperature.output;

    CommandResult out_of_vocab =
        run_lmrun("generate --model " + stories_dir() + " --prompt-ids 1,9999 --threads 1");
    EXPECT_NE(out_of_vocab.exit_code, 0);
    EXPECT_NE(out_of_vocab.output.find("9999"), std::string::npos) << out_of_vocab.output;
}

TEST(Cli, EverySubcommandHasHelp) {
    for (const char* command : {"generate", "chat", "bench"}) {
        CommandResult result = run_lmrun(std::string(command) + " --help");
        EXPECT_EQ(result.exit_code, 0) << command;
        EXPECT_NE(result.output.find("--model"), std::string::npos) << command << ": " << result.output;
    }
    CommandResult router = run_lmrun("router --help");
    EXPECT_EQ(router.exit_code, 0);
    EXPECT_NE(router.output.find("--policy"), std::string::npos) << router.output;
}

TEST(Cli, RouterAndDataParallelOptionsAreChecked) {
    CommandResult no_workers = run_lmrun("router --port 0");
    EXPECT_EQ(no_workers.exit_code, 1);
    EXPECT_NE(no_workers.output.find("no workers"), std::string::npos) << no_workers.output;

    CommandResult bad_policy = run_lmrun("router --worker http://127.0.0.1:1 --policy random");
    EXPECT_EQ(bad_policy.exit_code, 1);
    EXPECT_NE(bad_policy.output.find("--policy"), std::string::npos) << bad_policy.output;

    CommandResult bad_url = run_lmrun("router --worker ftp://x");
    EXPECT_EQ(bad_url.exit_code, 1);
    EXPECT_NE(bad_url.output.find("ftp://x"), std::string::npos) << bad_url.output;

    CommandResult bad_size = run_lmrun("serve --model " + stories_dir() + " --data-parallel-size 0");
    EXPECT_EQ(bad_size.exit_code, 1);
    EXPECT_NE(bad_size.output.find("--data-parallel-size"), std::string::npos) << bad_size.output;

    CommandResult bad_dp_policy =
        run_lmrun("serve --model " + stories_dir() + " --data-parallel-size 2 --data-parallel-policy x");
    EXPECT_EQ(bad_dp_policy.exit_code, 1);
    EXPECT_NE(bad_dp_policy.output.find("--data-parallel-policy"), std::string::npos) << bad_dp_policy.output;
}

}  // namespace
}  // namespace lmrun::testing
