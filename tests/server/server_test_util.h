// Shared by the server's C++ tests: the stories260k engine and its goldens, and a raw
// TCP client for what an HTTP library will not send (slow bytes, chunked bodies, hang-ups).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/llm_engine.h"

namespace lmrun::server::testing {

struct StoriesGolden {
    std::string name;
    std::string prompt_text;
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> output_ids;  // without the BOS that ended bos_only_full
    std::string output_text;
    bool stopped_on_bos = false;
};

std::vector<StoriesGolden> stories_goldens();
EngineConfig stories_engine_config();
std::unique_ptr<LLMEngine> make_stories_engine();
// Greedy, stop on BOS (llama2.c's convention), the golden's length.
SamplingParams golden_params(const StoriesGolden& golden);

// A blocking loopback TCP connection; closed when destroyed.
class RawConnection {
  public:
    explicit RawConnection(int port);
    ~RawConnection();
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;

    bool connected() const { return fd_ >= 0; }
    bool send(std::string_view bytes);  // false once the server closed its side
    // Everything the server sends until it closes the connection, a whole response with a
    // Content-Length arrived, or `timeout_seconds` passed.
    std::string read_response(double timeout_seconds);
    // True when the server closed the connection (end of file or reset) within `timeout_seconds`.
    bool closed_by_server(double timeout_seconds);
    void close();

  private:
    int fd_ = -1;
};

// "HTTP/1.1 413 ..." -> 413; -1 when there is no status line.
int status_of(const std::string& response);
std::string body_of(const std::string& response);  // after the blank line (chunked framing kept)
std::string chunked(std::string_view body, size_t chunk_bytes);  // Transfer-Encoding: chunked framing

}  // namespace lmrun::server::testing
