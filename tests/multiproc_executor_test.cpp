// The mp backend's start-up checks and faults:
//   - a shape that does not split over the ranks is a start-up error naming the dimension;
//   - fewer KV heads than ranks replicate them (16 heads / 8 KV heads at -tp 16), and a
//     vocabulary that does not divide is padded: logits still match one process;
//   - a checkpoint corrupt only where rank 1 reads fails the start with an error naming rank 1;
//   - a worker killed during generation: every request in flight ends with an error naming the
//     rank within a second, the engine reports itself unhealthy and refuses new requests;
//   - rank 0 killed: its workers are gone within 5 s (no orphans).
#include "parallel/multiproc_executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "engine_test_util.h"
#include "executor_test_util.h"
#include "model/random_checkpoint.h"
#include "runner_test_util.h"
#include "test_util.h"

extern char** environ;

namespace lmrun::testing {
namespace {

const Launch kMp2{parallel::ExecutorBackend::Mp, 2};

Error start_error(const std::string& model, int tensor_parallel_size) {
    parallel::ExecutorConfig config;
    config.model_dir = model[0] == '/' ? model : testdata_path(model);
    config.dtype = DType::F32;
    config.runner = small_config(16);
    config.tensor_parallel_size = tensor_parallel_size;
    config.backend = parallel::ExecutorBackend::Mp;
    auto executor = parallel::Executor::create(config);
    EXPECT_FALSE(executor.ok()) << model << " at -tp " << tensor_parallel_size << " started";
    return executor.ok() ? Error{} : executor.error();
}

TEST(MultiprocExecutor, ADimensionThatDoesNotSplitIsAStartUpErrorNamingIt) {
    Error heads = start_error("stories260k", 3);
    EXPECT_NE(heads.message.find("num_attention_heads 8"), std::string::npos) << heads.message;
    EXPECT_EQ(heads.subject, "tensor_parallel_size");
    Error qwen_heads = start_error("qwen3-tiny", 16);
    EXPECT_NE(qwen_heads.message.find("num_attention_heads 8"), std::string::npos) << qwen_heads.message;
    // 8 heads split, 4 KV heads replicate twice, but 172 intermediate features do not split in 8.
    Error intermediate = start_error("stories260k", 8);
    EXPECT_NE(intermediate.message.find("intermediate_size 172"), std::string::npos) << intermediate.message;
}

// Qwen3-0.6B's attention (16 heads, 8 KV heads) on a small random model whose vocabulary (1000)
// does not divide by 16: each rank holds one query head and a copy of its KV head.
TEST(MultiprocExecutor, SixteenRanksReplicateEightKvHeadsAndMatchOneProcess) {
    const std::string dir = make_temp_dir("qwen3_16_heads");
    RandomCheckpointOptions options;
    options.config = qwen3_0_6b_config();
    options.config.hidden_size = 64;
    options.config.intermediate_size = 128;
    options.config.num_hidden_layers = 2;
    options.config.head_dim = 16;
    options.config.vocab_size = 1000;
    options.config.max_position_embeddings = 256;
    options.dtype = DType::F32;
    options.std = 0.2f;
    ASSERT_TRUE(write_random_checkpoint(dir, options).ok());
    ModelRunnerConfig config = small_config(16);
    config.max_model_len = 256;
    auto single = make_executor(dir, DType::F32, config, Launch{parallel::ExecutorBackend::Mp, 1});
    auto split = make_executor(dir, DType::F32, config, Launch{parallel::ExecutorBackend::Mp, 16});
    EXPECT_EQ(split->runner().model().num_heads_local(), 1);
    EXPECT_EQ(split->runner().model().num_kv_heads_local(), 1);
    std::vector<int32_t> ids(40);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 389 + 7) % 1000);
    std::vector<int32_t> rows = {0, 13, 26, 39};
    int64_t top_single = single->runner().num_kv_blocks() - 1,
            top_split = split->runner().num_kv_blocks() - 1;
    auto blocks_single = take_blocks(top_single, 41, 16), blocks_split = take_blocks(top_split, 41, 16);
    RunnerSequence seq_single{ids, blocks_single, 0, 40, true, {}},
        seq_split{ids, blocks_split, 0, 40, true, {}};
    auto want_span = single->runner().compute_logits_at(seq_single, rows);
    std::vector<float> want(want_span.begin(), want_span.end());
    auto got = split->runner().compute_logits_at(seq_split, rows);
    ASSERT_EQ(got.size(), want.size());
    float worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    EXPECT_LT(worst, 1e-4f);
    EXPECT_FALSE(split->runner().group().failed());
}

// stories260k with one NaN in rank 1's half (columns 86..171) of a row-parallel weight.
std::string corrupt_for_rank_1() {
    const std::string source = testdata_path("stories260k");
    const std::string dir = make_temp_dir("stories_corrupt_rank1");
    std::filesystem::copy_file(source + "/config.json", dir + "/config.json");
    std::ifstream in(source + "/model.safetensors", std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t header_bytes = 0;
    std::memcpy(&header_bytes, bytes.data(), 8);
    auto header = nlohmann::json::parse(std::string(bytes.data() + 8, header_bytes));
    const auto& tensor = header.at("model.layers.2.mlp.down_proj.weight");  // F32 [64, 172]
    EXPECT_EQ(tensor.at("shape"), (nlohmann::json{64, 172}));
    const size_t offset = 8 + header_bytes + tensor.at("data_offsets")[0].get<size_t>();
    const float nan = std::nanf("");
    std::memcpy(bytes.data() + offset + (3 * 172 + 120) * sizeof(float), &nan, sizeof(nan));
    std::ofstream(dir + "/model.safetensors", std::ios::binary)
        .write(bytes.data(), std::streamsize(bytes.size()));
    return dir;
}

TEST(MultiprocExecutor, ACorruptShardOnOneRankFailsTheStartNamingTheRank) {
    Error error = start_error(corrupt_for_rank_1(), 2);
    EXPECT_EQ(error.message.rfind("rank 1: ", 0), 0u) << error.message;
    EXPECT_NE(error.message.find("model.layers.2.mlp.down_proj.weight"), std::string::npos) << error.message;
    EXPECT_EQ(error.kind, ErrorKind::Corrupt);
}

TEST(MultiprocExecutor, AWorkerKilledDuringGenerationFailsEveryRequestInFlight) {
    auto engine = make_engine(stories_config_on_ranks(2));
    SamplingParams params;
    params.max_tokens = 400;
    params.ignore_eos = true;
    for (int i = 0; i < 4; ++i)
        ASSERT_TRUE(engine->add_request("r" + std::to_string(i), {1, 403, 407}, params).ok());
    for (int step = 0; step < 5; ++step) ASSERT_TRUE(engine->step().empty());
    const std::vector<pid_t> workers = engine->executor().worker_pids();
    ASSERT_EQ(workers.size(), 1u);
    ASSERT_EQ(kill(workers[0], SIGKILL), 0);
    const int64_t killed_at = parallel::monotonic_ns();
    std::vector<RequestOutput> finished;
    while (engine->has_unfinished_requests() && parallel::monotonic_ns() - killed_at < 10'000'000'000)
        for (RequestOutput& output : engine->step()) finished.push_back(std::move(output));
    EXPECT_LT(parallel::monotonic_ns() - killed_at, 1'000'000'000) << "noticed after more than a second";
    ASSERT_EQ(finished.size(), 4u);
    for (const RequestOutput& output : finished) {
        const CompletionOutput& completion = output.outputs.at(0);
        EXPECT_EQ(completion.finish_reason, FinishReason::Error);
        EXPECT_NE(completion.error_message.find("rank 1"), std::string::npos) << completion.error_message;
        EXPECT_NE(completion.error_message.find("signal 9"), std::string::npos) << completion.error_message;
        EXPECT_LT(completion.token_ids.size(), 400u);
    }
    ASSERT_FALSE(engine->health().ok());
    Status refused = engine->add_request("late", {1, 2}, params);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind, ErrorKind::Unavailable);
}

// A shutdown after real steps: every worker exits by itself with status 0 and is reaped (no
// process left), and the executor refuses further steps instead of touching freed ranks.
TEST(MultiprocExecutor, ShutdownStopsEveryWorkerCleanly) {
    auto engine = make_engine(stories_config_on_ranks(4));
    SamplingParams params;
    params.max_tokens = 8;
    ASSERT_TRUE(engine->add_request("r", {1, 403, 407}, params).ok());
    while (engine->has_unfinished_requests()) engine->step();
    const std::vector<pid_t> workers = engine->executor().worker_pids();
    ASSERT_EQ(workers.size(), 3u);
    Status stopped = engine->executor().shutdown();
    EXPECT_TRUE(stopped.ok()) << stopped.error().message;
    for (pid_t worker : workers) {
        errno = 0;
        EXPECT_EQ(kill(worker, 0), -1) << "worker " << worker << " still exists";
        EXPECT_EQ(errno, ESRCH);
    }
    EXPECT_EQ(engine->executor().health().error().kind, ErrorKind::Unavailable);
    EXPECT_TRUE(engine->executor().shutdown().ok()) << "a second shutdown is a no-op";
}

// `lmrun serve -tp 2` in a child process; its stderr read line by line.
class ServerProcess {
  public:
    explicit ServerProcess(const std::vector<std::string>& extra) {
        std::vector<std::string> args = {std::string(LMRUN_BINARY_DIR) + "/lmrun",
                                         "serve",
                                         "--model",
                                         testdata_path("stories260k"),
                                         "--port",
                                         "0",
                                         "--kv-cache-memory",
                                         "0.1"};
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (std::string& arg : args) argv.push_back(arg.data());
        argv.push_back(nullptr);
        int pipe_fds[2];
        EXPECT_EQ(pipe(pipe_fds), 0);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
        posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
        EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
        posix_spawn_file_actions_destroy(&actions);
        close(pipe_fds[1]);
        stderr_fd_ = pipe_fds[0];
    }
    ~ServerProcess() {
        if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
        close(stderr_fd_);
    }
    // Reads stderr until `pattern` matches (or timeout); returns the match's first group.
    std::string wait_for(const std::string& pattern, double timeout_seconds) {
        const std::regex regex(pattern);
        const int64_t deadline = parallel::monotonic_ns() + int64_t(timeout_seconds * 1e9);
        while (parallel::monotonic_ns() < deadline) {
            std::smatch match;
            if (std::regex_search(log_, match, regex))
                return match.size() > 1 ? match[1].str() : match[0].str();
            pollfd fd{stderr_fd_, POLLIN, 0};
            if (poll(&fd, 1, 100) <= 0) continue;
            char buffer[4096];
            ssize_t got = read(stderr_fd_, buffer, sizeof(buffer));
            if (got <= 0) break;
            log_.append(buffer, size_t(got));
        }
        ADD_FAILURE() << "no match for " << pattern << " in:\n" << log_;
        return "";
    }
    pid_t pid() const { return pid_; }

  private:
    pid_t pid_ = -1;
    int stderr_fd_ = -1;
    std::string log_;
};

// Waits up to timeout for `pid` (a child of this process) to exit.
bool reaped_within(pid_t pid, double timeout_seconds) {
    const int64_t deadline = parallel::monotonic_ns() + int64_t(timeout_seconds * 1e9);
    while (parallel::monotonic_ns() < deadline) {
        if (waitpid(pid, nullptr, WNOHANG) == pid) return true;
        usleep(10'000);
    }
    return false;
}

TEST(MultiprocExecutor, WorkersExitWhenRankZeroIsKilled) {
    // Orphans are re-parented to this process, so that it can reap (and so see) them.
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    {
        ServerProcess server({"-tp", "2"});
        const std::string worker =
            server.wait_for(R"(rank 1: cpus? [0-9,-]+ \(\d+ threads?\), pid (\d+))", 60);
        server.wait_for("listening on", 60);
        ASSERT_FALSE(worker.empty());
        ASSERT_EQ(kill(server.pid(), SIGKILL), 0);
        EXPECT_TRUE(reaped_within(server.pid(), 5));
        EXPECT_TRUE(reaped_within(pid_t(std::stol(worker)), 5)) << "worker " << worker << " outlived rank 0";
    }
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

}  // namespace
}  // namespace lmrun::testing
