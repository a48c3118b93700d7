// One HTTP request and the way to answer it, as the endpoints see them: independent of
// the HTTP library underneath (http_transport.h). A response is either a whole body or a
// BodyStream the transport pulls from as the client can take it (Server-Sent Events).
// The answer may come later and from any thread (a worker, after the engine finished);
// meanwhile the connection holds no thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lmrun::server {

struct HttpRequest {
    std::string method;
    std::string path;
    std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
    std::string body;

    // The value of the first header named `name` (lower case), "" when absent.
    std::string_view header(std::string_view name) const;
};

// A response body produced while it is sent. The transport calls poll() on one thread at a
// time and finished() once, at the end.
class BodyStream {
  public:
    enum class Poll {
        Data,     // bytes were appended to `out`; poll again
        Pending,  // nothing ready: `wake` is armed and will be called once, from any thread, when there is
        End,      // `out` holds the last bytes (possibly none)
    };
    virtual ~BodyStream() = default;
    virtual Poll poll(std::string& out, const std::function<void()>& wake) = 0;
    // complete: every byte reached the socket; false: the client went away, a write failed or the
    // server is stopping.
    virtual void finished(bool complete) = 0;
};

struct HttpResponse {
    int status = 200;
    std::string content_type;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::shared_ptr<BodyStream> stream;  // set: the body is streamed (chunked) and `body` is unused

    void set_header(std::string name, std::string value) {
        headers.emplace_back(std::move(name), std::move(value));
    }
};

class HttpExchange {
  public:
    virtual ~HttpExchange() = default;
    virtual const HttpRequest& request() const = 0;
    // The answer; the first call wins, later ones are ignored. Any thread.
    virtual void respond(HttpResponse response) = 0;
    // Called at most once, from a server thread, if the client disconnects before the exchange ends
    // (it closed its side of the connection): work done for it can stop. Any thread.
    virtual void on_client_gone(std::function<void()> callback) = 0;
};

}  // namespace lmrun::server
