// The lmrun command as a user runs it: generate prints the golden story, bad
// input gets a clear message and a non-zero exit code (the router's and --data-parallel-size's
// options too), every subcommand has --help, perplexity prints its JSON record.
#include <gtest/gtest.h>
#include <sched.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"

namespace lmrun::testing {
namespace {

CommandResult run_lmrun(const std::string& arguments) {
    return run_shell_command(std::string(LMRUN_BINARY_DIR) + "/lmrun " + arguments);
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

// --logprobs N with --json: per token the sampled id and logprob and the N best alternatives.
TEST(Cli, GenerateJsonCarriesLogprobs) {
    CommandResult result = run_lmrun("generate --model " + stories_dir() +
                                     " --prompt \"Once upon a time\" --max-tokens 5 --temperature 0 --json "
                                     "--logprobs 2 --no-progress --threads 1");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    size_t start = result.output.find("{\"");
    ASSERT_NE(start, std::string::npos) << result.output;
    nlohmann::json record =
        nlohmann::json::parse(result.output.substr(start, result.output.find('\n', start) - start));
    ASSERT_EQ(record["logprobs"].size(), 5u) << record.dump();
    for (size_t i = 0; i < 5; ++i) {
        const nlohmann::json& token = record["logprobs"][i];
        EXPECT_EQ(token["token_id"], record["token_ids"][i]);
        ASSERT_EQ(token["top"].size(), 2u);
        // Greedy: the sampled token is the most likely one.
        EXPECT_EQ(token["top"][0][0], token["token_id"]);
        EXPECT_NEAR(token["top"][0][1].get<float>(), token["logprob"].get<float>(), 1e-5);
        EXPECT_LE(token["logprob"].get<float>(), 0.0f);
        EXPECT_GE(token["top"][0][1].get<float>(), token["top"][1][1].get<float>());
    }
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

// The decode attention's prefetch level is fixed once per process, so an invalid override is
// seen only by a fresh process: a one-line warning naming the value, and the CPU's own level
// serves the request (same greedy output as without the variable).
TEST(Cli, InvalidKvPrefetchOverrideIsWarnedAndIgnored) {
    const std::string generate = std::string(LMRUN_BINARY_DIR) + "/lmrun generate --model " + stories_dir() +
                                 " --prompt-ids 1 --max-tokens 20 --temperature 0 --no-progress --threads 1";
    CommandResult plain = run_shell_command(generate);
    CommandResult bogus = run_shell_command("LMRUN_KV_PREFETCH=l3 " + generate);
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    ASSERT_EQ(bogus.exit_code, 0) << bogus.output;
    EXPECT_NE(bogus.output.find("LMRUN_KV_PREFETCH=l3 ignored"), std::string::npos) << bogus.output;
    EXPECT_EQ(plain.output.find("LMRUN_KV_PREFETCH"), std::string::npos) << plain.output;
    const size_t story = plain.output.find("Once upon a time");
    ASSERT_NE(story, std::string::npos) << plain.output;
    const std::string text = plain.output.substr(story, plain.output.find('\n', story) - story);
    EXPECT_NE(bogus.output.find(text), std::string::npos) << bogus.output;
}

// Output without the log lines (they name timings and paths).
std::string without_log_lines(const std::string& output) {
    std::string kept, line;
    for (char c : output) {
        line += c;
        if (c != '\n') continue;
        if (line.rfind("lmrun ", 0) != 0) kept += line;
        line.clear();
    }
    return kept + line;
}

TEST(Cli, KvOffloadDirSurvivesTheProcess) {
    const std::string dir = make_temp_dir("cli_kv_offload");
    nlohmann::json expected = read_json_file(testdata_path("stories260k/expected.json"));
    std::string prompt_ids = "1";
    for (int i = 0; i < 60; ++i)
        prompt_ids += "," + std::to_string(expected["cases"][0]["output_ids"][i].get<int>());
    const std::string command = "generate --model " + stories_dir() + " --prompt-ids " + prompt_ids +
                                " --max-tokens 20 --temperature 0 --no-progress --threads 1 --block-size 16" +
                                " --kv-offload-dir " + dir + "/store --kv-offload-size 0.01";
    CommandResult first = run_lmrun(command);
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_EQ(first.output.find("KV tier: loaded"), std::string::npos) << first.output;
    CommandResult second = run_lmrun(command);  // a new process on the same directory
    ASSERT_EQ(second.exit_code, 0) << second.output;
    // 61 prompt tokens: 3 full blocks of 16 before the block holding the last token. The tiny
    // model computes faster than it reads, but a fresh engine loads until it has measured both.
    EXPECT_NE(second.output.find("KV tier: loaded 3 of 3 blocks"), std::string::npos) << second.output;
    EXPECT_EQ(without_log_lines(second.output), without_log_lines(first.output));
    EXPECT_FALSE(without_log_lines(first.output).empty());
}

// The packed weight files a command left in a cache directory.
std::vector<std::string> packed_files_in(const std::string& dir) {
    std::vector<std::string> files;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error))
        if (entry.path().extension() == ".lmpack") files.push_back(entry.path().string());
    return files;
}

TEST(Cli, PackedCacheIsOnByDefaultAndNoneTurnsItOff) {
    const std::string dir = make_temp_dir("cli_packed_cache");
    const std::string command = "generate --model " + stories_dir() +
                                " --prompt-ids 1 --max-tokens 24 --temperature 0 --no-progress --threads 1";
    CommandResult first = run_shell_command("LMRUN_CACHE_DIR=" + dir + "/default " +
                                            std::string(LMRUN_BINARY_DIR) + "/lmrun " + command);
    ASSERT_EQ(first.exit_code, 0) << first.output;
    EXPECT_NE(first.output.find("packed weights written to " + dir + "/default/packed/"), std::string::npos)
        << first.output;
    ASSERT_EQ(packed_files_in(dir + "/default/packed").size(), 1u);
    CommandResult second = run_shell_command("LMRUN_CACHE_DIR=" + dir + "/default " +
                                             std::string(LMRUN_BINARY_DIR) + "/lmrun " + command);
    ASSERT_EQ(second.exit_code, 0) << second.output;
    EXPECT_EQ(second.output.find("packed weights written"), std::string::npos) << second.output;
    EXPECT_EQ(without_log_lines(second.output), without_log_lines(first.output));

    CommandResult off = run_shell_command("LMRUN_CACHE_DIR=" + dir + "/off " + std::string(LMRUN_BINARY_DIR) +
                                          "/lmrun " + command + " --packed-cache none");
    ASSERT_EQ(off.exit_code, 0) << off.output;
    EXPECT_EQ(without_log_lines(off.output), without_log_lines(first.output));
    EXPECT_FALSE(std::filesystem::exists(dir + "/off")) << off.output;

    CommandResult too_small =
        run_lmrun(command + " --packed-cache " + dir + "/small --packed-cache-size 0.001");
    ASSERT_EQ(too_small.exit_code, 0) << too_small.output;
    EXPECT_NE(too_small.output.find("not written"), std::string::npos) << too_small.output;
    EXPECT_TRUE(packed_files_in(dir + "/small").empty());
}

TEST(Cli, EverySubcommandHasHelp) {
    for (const char* command : {"generate", "chat", "bench", "perplexity"}) {
        CommandResult result = run_lmrun(std::string(command) + " --help");
        EXPECT_EQ(result.exit_code, 0) << command;
        EXPECT_NE(result.output.find("--model"), std::string::npos) << command << ": " << result.output;
    }
    CommandResult router = run_lmrun("router --help");
    EXPECT_EQ(router.exit_code, 0);
    EXPECT_NE(router.output.find("--policy"), std::string::npos) << router.output;
}

// lmrun bench as a user runs it, at tiny sizes: every workload asked for is printed and written
// to --json in order, with a positive rate, and each runner workload against its roofline.
TEST(Cli, BenchReportsEveryWorkloadAgainstItsRoofline) {
    const std::string json_path = make_temp_dir("cli_bench") + "/bench.json";
    CommandResult result = run_lmrun(
        "bench --model " + stories_dir() +
        " --prompt-lens 16 --decode-batches 1,4 --context-sweep 32,64 --context-batch 2 "
        "--engine-batch 2 --repeats 1 --decode-steps 2 --threads 1 --kv-cache-memory 0.01 --profile "
        "--json " +
        json_path);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const std::vector<std::string> names = {"engine decode batch 2", "prefill 16",
                                            "decode batch 1",        "decode batch 4",
                                            "decode b2 context 32",  "decode b2 context 64"};
    for (const std::string& name : names) EXPECT_NE(result.output.find(name), std::string::npos) << name;
    EXPECT_NE(result.output.find("per-op time"), std::string::npos) << result.output;
    nlohmann::json report = read_json_file(json_path);
    EXPECT_EQ(report["threads"], 1);
    EXPECT_GT(report["limits"]["read_bytes_per_s"].get<double>(), 0);
    EXPECT_GT(report["limits"]["gemm_flops_per_s"].get<double>(), 0);
    ASSERT_EQ(report["workloads"].size(), names.size()) << report.dump(2);
    for (size_t i = 0; i < names.size(); ++i) {
        const nlohmann::json& row = report["workloads"][i];
        EXPECT_EQ(row["workload"], names[i]);
        const double rate = row["tokens_per_s"].get<double>();
        EXPECT_TRUE(std::isfinite(rate) && rate > 0) << row.dump();
        if (i == 0) {  // the engine's row: a target on its overhead, no roofline
            EXPECT_FALSE(row.contains("roofline_tokens_per_s")) << row.dump();
            EXPECT_TRUE(row.contains("target_met")) << row.dump();
            continue;
        }
        const double roofline = row["roofline_tokens_per_s"].get<double>();
        EXPECT_GT(roofline, 0) << row.dump();
        EXPECT_NEAR(row["fraction_of_roofline"].get<double>(), rate / roofline, 1e-9) << row.dump();
    }
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

// A model folder like stories260k (weights and tokenizer linked, not copied) whose
// config.json has `field` set to `value`; `with_tokenizer` false leaves tokenizer.json out.
std::string model_with(const std::string& name, const nlohmann::json& changes, bool with_tokenizer = true) {
    const std::string dir = make_temp_dir("cli_" + name);
    nlohmann::json config = read_json_file(stories_dir() + "/config.json");
    for (const auto& [field, value] : changes.items()) config[field] = value;
    std::ofstream(dir + "/config.json") << config.dump();
    std::vector<std::string> files = {"model.safetensors"};
    if (with_tokenizer) files.insert(files.end(), {"tokenizer.json", "tokenizer_config.json"});
    for (const std::string& file : files)
        std::filesystem::create_symlink(stories_dir() + "/" + file, dir + "/" + file);
    return dir;
}

void expect_failure(const CommandResult& result, int exit_code, const std::string& message) {
    EXPECT_EQ(result.exit_code, exit_code) << result.output;
    EXPECT_NE(result.output.find(message), std::string::npos) << result.output;
}

// Issue 10, item 10: config.json values that would abort or allocate without bound.
TEST(CliRobustness, ConfigValuesOutsideWhatLmrunRunsAreClearErrors) {
    const std::string head_dim = model_with("head_dim", {{"head_dim", 512}});
    expect_failure(
        run_lmrun("generate --model " + head_dim + " --prompt-ids 1"), 2,
        head_dim + "/config.json: unsupported head_dim 512 (supported: even values from 2 to 256)");
    const std::string layers = model_with("layers", {{"num_hidden_layers", 1000000}});
    expect_failure(run_lmrun("generate --model " + layers + " --prompt-ids 1"), 2,
                   layers +
                       "/config.json: field 'num_hidden_layers' = 1000000 is larger than lmrun supports (at "
                       "most 1024)");
    const std::string vocab = model_with("vocab", {{"vocab_size", 1000000000}});
    expect_failure(run_lmrun("generate --model " + vocab + " --prompt-ids 1"), 2,
                   vocab + "/config.json: field 'vocab_size' = 1000000000 is larger than lmrun supports");
    // Within every limit, but hundreds of TiB of weights: more than any machine has.
    const std::string huge = model_with("huge", {{"hidden_size", 65536},
                                                 {"intermediate_size", 262144},
                                                 {"num_hidden_layers", 1024},
                                                 {"num_attention_heads", 256},
                                                 {"num_key_value_heads", 256},
                                                 {"head_dim", 256},
                                                 {"vocab_size", 4194304}});
    expect_failure(run_lmrun("generate --model " + huge + " --prompt-ids 1"), 3,
                   huge + "/config.json: the model needs 263168.5 GiB for its F32 weights, ");
    // Within the limits and the memory, but not what the checkpoint holds: refused before allocating.
    const std::string more_layers = model_with("more_layers", {{"num_hidden_layers", 1000}});
    expect_failure(run_lmrun("generate --model " + more_layers + " --prompt-ids 1"), 2,
                   "num_hidden_layers is 1000 but the checkpoint in " + more_layers +
                       " has no tensor 'model.layers.999.input_layernorm.weight'");
}

// Issue 10, item 11: a tokenizer.json nested 200,000 levels deep crashed the loader.
TEST(CliRobustness, DeeplyNestedTokenizerIsAClearError) {
    const std::string dir = model_with("deep_tokenizer", nlohmann::json::object(), false);
    std::ofstream(dir + "/tokenizer.json")
        << "{\"normalizer\": " << std::string(200000, '[') << std::string(200000, ']') << "}";
    expect_failure(run_lmrun("generate --model " + dir + " --prompt-ids 1 --threads 1"), 3,
                   dir + "/tokenizer.json: JSON nested deeper than 64 levels");
}

// Issue 10, item 12: a chat template with 100,000 chained filters crashed (SIGSEGV).
TEST(CliRobustness, TemplateWithHundredThousandFiltersIsAClearError) {
    const std::string dir = make_temp_dir("cli_template");
    std::string source = "{{ messages[0]['content']";
    for (int i = 0; i < 100000; ++i) source += "|trim";
    std::ofstream(dir + "/template.jinja") << source << " }}";
    expect_failure(run_lmrun("chat --model " + stories_dir() + " --chat-template " + dir +
                             "/template.jinja --threads 1 < /dev/null"),
                   3, dir + "/template.jinja: chat template: line 1, column ");
    EXPECT_NE(run_lmrun("chat --model " + stories_dir() + " --chat-template " + dir +
                        "/template.jinja --threads 1 < /dev/null")
                  .output.find("expression nested too deeply (more than 200 levels)"),
              std::string::npos);
}

// Issue 10, item 13: command-line values that crashed, hung or were accepted.
TEST(CliRobustness, BadOptionValuesAreOneLineUsageErrors) {
    const std::string model = "generate --model " + stories_dir() + " --prompt-ids 1 ";
    const std::pair<std::string, std::string> cases[] = {
        {"--temperature nan", "lmrun: --temperature: nan is not a finite number in [0, 100] (see --help)\n"},
        {"--temperature inf", "--temperature: inf is not a finite number in [0, 100]"},
        {"--kv-cache-memory -1", "--kv-cache-memory: -1 is not a finite number in [0, 1048576]"},
        {"--max-tokens -5", "lmrun: --max-tokens: -5 is not an integer >= 1 (see --help)\n"},
        {"--max-tokens 99999999999999999999", "--max-tokens: 99999999999999999999 is not an integer >= 1"},
        {"--top-p 2", "--top-p: 2 is not a finite number in [1e-09, 1]"},
        {"--threads -1", "--threads: -1 is not an integer in [0, 2147483647]"},
        {"--max-num-seqs 0", "--max-num-seqs: 0 is not an integer in [1, 16384]"},
        {"--dtype float8", "--dtype: float8 not in {auto,float32,bfloat16,f32,bf16}"},
        {"--no-such-option", "The following argument was not expected: --no-such-option"},
    };
    for (const auto& [options, message] : cases) {
        CommandResult result = run_lmrun(model + options);
        EXPECT_EQ(result.exit_code, 1) << options << ": " << result.output;
        EXPECT_NE(result.output.find(message), std::string::npos) << options << ": " << result.output;
    }
    // The other subcommands share the validators (cli/cli_options.h).
    const std::pair<std::string, std::string> other_commands[] = {
        {"generate --model " + stories_dir() + " --prompt-ids 1 --seed -1",
         "lmrun: --seed: -1 is not an integer in [0, 18446744073709551615] (see --help)\n"},
        {"chat --model " + stories_dir() + " --temperature nan",
         "lmrun: --temperature: nan is not a finite number in [0, 100] (see --help)\n"},
        {"chat --model " + stories_dir() + " --frequency-penalty -3",
         "--frequency-penalty: -3 is not a finite number in [-2, 2]"},
        {"bench --model " + stories_dir() + " --kv-cache-memory -1",
         "lmrun: --kv-cache-memory: -1 is not a finite number in [0, 1048576] (see --help)\n"},
        {"bench --model " + stories_dir() + " --threads -1",
         "--threads: -1 is not an integer in [0, 2147483647]"},
        {"bench --model " + stories_dir() + " --decode-batches 1,0",
         "--decode-batches: 0 is not an integer in [1, 16384]"},
        {"bench --model " + stories_dir() + " --dtype float8",
         "--dtype: float8 not in {auto,float32,bfloat16,f32,bf16}"},
        {"bench --model " + stories_dir() + " --kv-cache-dtype int4", "--kv-cache-dtype: int4 not in {"},
        {"generate --model " + stories_dir() + " --prompt-ids 1 --quantization int4",
         "--quantization: int4 not in {int8,none}"},
        {"perplexity --model " + stories_dir() + " --text x.txt --context 1",
         "lmrun: --context: 1 is not an integer in [2, 16777216] (see --help)\n"},
        {"perplexity --model " + stories_dir() + " --text x.txt --stride -1",
         "--stride: -1 is not an integer in [0, 16777216]"},
        {"perplexity --model " + stories_dir() + " --text x.txt --max-text-tokens -1",
         "--max-text-tokens: -1 is not an integer >= 0"},
    };
    for (const auto& [command, message] : other_commands) {
        CommandResult result = run_lmrun(command);
        EXPECT_EQ(result.exit_code, 1) << command << ": " << result.output;
        EXPECT_NE(result.output.find(message), std::string::npos) << command << ": " << result.output;
    }
    EXPECT_EQ(run_lmrun("generate").exit_code, 1);  // --model is required
    EXPECT_EQ(run_lmrun("").exit_code, 1);          // a subcommand is required
    EXPECT_EQ(run_lmrun("--help").exit_code, 0);
}

TEST(CliRobustness, TooManyThreadsAreCappedToTheCpus) {
    CommandResult result =
        run_lmrun("generate --model " + stories_dir() +
                  " --prompt-ids 1 --max-tokens 2 --temperature 0 --no-progress --threads 100000");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("--threads 100000 is more than the "), std::string::npos) << result.output;
}

// libgomp pins the initial thread to one core as it loads when OMP_PROC_BIND is in the
// environment (a user's tuning, or inherited from `lmrun bench --startup`, whose probes are
// children of a process that set it): the team must still cover every CPU, not that one core.
TEST(Cli, BindingEnvironmentStillUsesEveryCpu) {
    cpu_set_t allowed;
    ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    for (const char* environment : {"", "OMP_PROC_BIND=close OMP_PLACES=cores "}) {
        std::string command = std::string(environment) + LMRUN_BINARY_DIR + "/lmrun bench --model " +
                              stories_dir() + " --startup-probe 1 2>/dev/null";
        FILE* pipe = popen(command.c_str(), "r");
        ASSERT_NE(pipe, nullptr);
        std::array<char, 4096> line{};
        const bool read = fgets(line.data(), int(line.size()), pipe) != nullptr;
        pclose(pipe);
        ASSERT_TRUE(read) << command;
        nlohmann::json report = nlohmann::json::parse(line.data(), nullptr, false);
        ASSERT_TRUE(report.is_object()) << command << ": " << line.data();
        EXPECT_EQ(report["threads"], CPU_COUNT(&allowed)) << command;
    }
}

TEST(CliRobustness, ChatWithoutTokenizerIsAClearError) {
    const std::string dir = model_with("no_tokenizer", nlohmann::json::object(), false);
    expect_failure(run_lmrun("chat --model " + dir + " --threads 1 < /dev/null"), 2,
                   dir + ": no tokenizer.json; lmrun chat needs a tokenizer (pass --tokenizer DIR)");
    expect_failure(run_lmrun("generate --model " + dir + " --prompt hello --threads 1 --no-progress"), 2,
                   dir + ": the model has no tokenizer.json; give prompts as token ids");
}

}  // namespace
}  // namespace lmrun::testing
