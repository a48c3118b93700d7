#include "server_test_util.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "test_util.h"

namespace lmrun::server::testing {

std::vector<StoriesGolden> stories_goldens() {
    std::vector<StoriesGolden> goldens;
    // Held in a local: a range-for over read_json_file(...)["cases"] would iterate a destroyed temporary.
    const nlohmann::json expected =
        lmrun::testing::read_json_file(lmrun::testing::testdata_path("stories260k/expected.json"));
    for (const auto& item : expected["cases"]) {
        // The continuation as it reads after the prompt: run.c's stdout minus the prompt text.
        const std::string prompt_text = item["prompt_text"];
        const std::string full_text = item["decoded_text_prompt_plus_output"];
        goldens.push_back({item["name"], prompt_text, item["prompt_ids"].get<std::vector<int32_t>>(),
                           item["output_ids"].get<std::vector<int32_t>>(),
                           full_text.substr(prompt_text.size()), !item["stopped_on_token"].is_null()});
    }
    if (goldens.size() != 7) throw std::runtime_error("stories260k/expected.json: expected 7 cases");
    return goldens;
}

EngineConfig stories_engine_config() {
    EngineConfig config;
    config.model_dir = lmrun::testing::testdata_path("stories260k");
    config.dtype = "float32";
    config.num_threads = 1;
    config.runner.max_num_seqs = 8;
    config.runner.max_num_batched_tokens = 512;
    config.runner.max_model_len = 512;
    config.runner.block_size = 16;
    config.runner.kv_cache_memory_bytes = 32ll << 20;
    return config;
}

std::unique_ptr<LLMEngine> make_stories_engine() {
    auto engine = LLMEngine::create(stories_engine_config());
    if (!engine.ok()) throw std::runtime_error(engine.error().message);
    return std::move(engine).value();
}

SamplingParams golden_params(const StoriesGolden& golden) {
    SamplingParams params;
    params.temperature = 0;
    params.max_tokens = int64_t(golden.output_ids.size()) + (golden.stopped_on_bos ? 1 : 0);
    params.stop_token_ids = {1};
    params.ignore_eos = true;
    return params;
}

RawConnection::RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(uint16_t(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) close();
    const int one = 1;
    if (fd_ >= 0) setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawConnection::~RawConnection() {
    close();
}

void RawConnection::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

bool RawConnection::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent <= 0) return false;
        bytes.remove_prefix(size_t(sent));
    }
    return true;
}

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Whole when the headers ended and Content-Length bytes followed (or the chunked body ended).
bool complete_response(const std::string& text) {
    const size_t header_end = text.find("\r\n\r\n");
    if (header_end == std::string::npos) return false;
    const std::string headers = text.substr(0, header_end);
    std::string lower = headers;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    const size_t length_at = lower.find("content-length:");
    if (length_at != std::string::npos)
        return text.size() - header_end - 4 >= std::stoul(lower.substr(length_at + 15));
    if (lower.find("transfer-encoding: chunked") != std::string::npos)
        return text.size() >= 5 && text.compare(text.size() - 5, 5, "0\r\n\r\n") == 0;
    return false;
}

}  // namespace

std::string RawConnection::read_response(double timeout_seconds) {
    std::string text;
    const double deadline = now() + timeout_seconds;
    char buffer[65536];
    while (fd_ >= 0 && !complete_response(text)) {
        pollfd waiting{fd_, POLLIN, 0};
        const int milliseconds = int((deadline - now()) * 1000);
        if (milliseconds <= 0 || poll(&waiting, 1, milliseconds) <= 0) break;
        const ssize_t count = recv(fd_, buffer, sizeof buffer, 0);
        if (count <= 0) break;
        text.append(buffer, size_t(count));
    }
    return text;
}

bool RawConnection::closed_by_server(double timeout_seconds) {
    const double deadline = now() + timeout_seconds;
    char buffer[4096];
    while (fd_ >= 0) {
        pollfd waiting{fd_, POLLIN, 0};
        const int milliseconds = int((deadline - now()) * 1000);
        if (milliseconds <= 0 || poll(&waiting, 1, milliseconds) <= 0) return false;
        const ssize_t count = recv(fd_, buffer, sizeof buffer, 0);
        if (count <= 0) return true;  // end of file, or reset
    }
    return true;
}

int status_of(const std::string& response) {
    if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return -1;
    return std::atoi(response.substr(9, 3).c_str());
}

std::string body_of(const std::string& response) {
    const size_t header_end = response.find("\r\n\r\n");
    return header_end == std::string::npos ? std::string() : response.substr(header_end + 4);
}

std::string chunked(std::string_view body, size_t chunk_bytes) {
    std::string framed;
    for (size_t at = 0; at < body.size(); at += chunk_bytes) {
        const std::string_view chunk = body.substr(at, chunk_bytes);
        framed += fmt::format("{:x}\r\n", chunk.size());
        framed.append(chunk);
        framed += "\r\n";
    }
    return framed + "0\r\n\r\n";
}

}  // namespace lmrun::server::testing
