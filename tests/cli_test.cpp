// The lmrun command as a user runs it: generate prints the golden story, bad
// input gets a clear message and a non-zero exit code, every subcommand has --help, perplexity
// prints its JSON record.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
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
    for (const char* command : {"generate", "chat", "bench", "perplexity"}) {
        CommandResult result = run_lmrun(std::string(command) + " --help");
        EXPECT_EQ(result.exit_code, 0) << command;
        EXPECT_NE(result.output.find("--model"), std::string::npos) << command << ": " << result.output;
    }
}

nlohmann::json last_json_line(const std::string& output) {
    const size_t start = output.rfind("\n{\"");
    if (start == std::string::npos) return nullptr;
    return nlohmann::json::parse(output.substr(start + 1, output.find('\n', start + 1) - start - 1));
}

TEST(Cli, PerplexityScoresATextFile) {
    const std::string text = make_temp_dir("cli_perplexity") + "/story.txt";
    std::ofstream(text)
        << "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
           "park. One day, she saw a big dog. The dog was very happy and wanted to play with her.\n";
    const std::string base =
        "perplexity --model " + stories_dir() + " --text " + text + " --context 32 --threads 1 --json";
    CommandResult plain = run_lmrun(base);
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    nlohmann::json record = last_json_line(plain.output);
    ASSERT_TRUE(record.is_object()) << plain.output;
    EXPECT_EQ(record["context"], 32);
    EXPECT_EQ(record["stride"], 16);
    EXPECT_EQ(record["tokens_scored"].get<int64_t>(), record["tokens"].get<int64_t>() - 1);
    // The model's own kind of text: far below the 512-token vocabulary's uniform perplexity.
    const double perplexity = record["perplexity"];
    EXPECT_GT(perplexity, 1.0);
    EXPECT_LT(perplexity, 50.0);
    CommandResult quantized = run_lmrun(base + " --quantization int8 --kv-cache-dtype int8");
    ASSERT_EQ(quantized.exit_code, 0) << quantized.output;
    nlohmann::json quantized_record = last_json_line(quantized.output);
    ASSERT_TRUE(quantized_record.is_object()) << quantized.output;
    EXPECT_EQ(quantized_record["weight_quantization"], "int8");
    EXPECT_EQ(quantized_record["kv_cache_dtype"], "int8");
    EXPECT_NE(quantized_record["perplexity"].get<double>(), perplexity);  // the quantized path really ran
    EXPECT_NEAR(quantized_record["perplexity"].get<double>() / perplexity, 1.0, 0.05);

    CommandResult missing =
        run_lmrun("perplexity --model " + stories_dir() + " --text /nonexistent/text.txt");
    EXPECT_NE(missing.exit_code, 0);
    EXPECT_NE(missing.output.find("/nonexistent/text.txt"), std::string::npos) << missing.output;
    CommandResult bad_stride = run_lmrun(base + " --stride 40");
    EXPECT_NE(bad_stride.exit_code, 0);
    EXPECT_NE(bad_stride.output.find("--stride"), std::string::npos) << bad_stride.output;
}

}  // namespace
}  // namespace lmrun::testing
