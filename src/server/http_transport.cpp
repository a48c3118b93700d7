#include "server/http_transport.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <optional>
#include <thread>

#include "core/logging.h"
#include "server/api_error.h"

namespace lmrun::server {
namespace {

// MHD asks the content reader for at most this much at a time.
constexpr size_t kStreamBlockBytes = size_t(16) << 10;  // 16 KiB

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::string to_lower(std::string_view text) {
    std::string lower(text);
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    return lower;
}

MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, size_t key_size, const char* value,
                          size_t value_size) {
    auto& headers = *static_cast<std::vector<std::pair<std::string, std::string>>*>(cls);
    headers.emplace_back(to_lower(std::string_view(key, key_size)),
                         value ? std::string(value, value_size) : std::string());
    return MHD_YES;
}

void log_from_mhd(void*, const char* format, va_list args) {
    char line[512];
    std::vsnprintf(line, sizeof line, format, args);
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    log_debug("http: {}", text);
}

int socket_fd(MHD_Connection* connection) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

}  // namespace

// One request on one connection, from its headers to the end of its response. Owned by MHD's
// per-request pointer (until the request ends) and by whoever is still working on the answer.
class HttpTransport::Exchange final : public HttpExchange, public std::enable_shared_from_this<Exchange> {
  public:
    Exchange(HttpTransport& transport, MHD_Connection* connection, ConnectionMonitor::Connection* record)
        : transport_(transport), connection_(connection), record_(record), fd_(socket_fd(connection)) {}

    const HttpRequest& request() const override { return request_; }
    HttpRequest& mutable_request() { return request_; }
    ConnectionMonitor::Connection* record() const { return record_; }
    bool dispatched() const { return dispatched_; }
    int status() const { return status_; }

    void respond(HttpResponse response) override {
        std::lock_guard lock(mutex_);
        if (closed_ || responded_) return;
        responded_ = true;
        response_ = std::move(response);
        resume_locked();
    }

    void on_client_gone(std::function<void()> callback) override {
        std::lock_guard lock(mutex_);
        if (closed_ || watch_id_ != 0) return;
        on_gone_ = std::move(callback);
        std::weak_ptr<Exchange> weak = weak_from_this();
        watch_id_ = transport_.monitor_.watch(fd_, [weak] {
            if (auto self = weak.lock()) self->client_gone();
        });
    }

    // I/O thread: a piece of the body.
    void append_body(const char* data, size_t size) {
        if (too_large_) return;  // read to the end and dropped; the answer is 413
        if (request_.body.size() + size > transport_.options_.max_body_bytes) {
            too_large_ = true;
            std::string().swap(request_.body);
            return;
        }
        request_.body.append(data, size);
    }

    // I/O thread: the request arrived whole (first call), or the connection was resumed.
    MHD_Result on_request_complete() {
        if (!dispatched_) {
            dispatched_ = true;
            ++transport_.num_open_exchanges_;
            if (record_) transport_.monitor_.busy(record_);
            if (too_large_)
                respond(error_response(payload_too_large(transport_.options_.max_body_bytes)));
            else
                transport_.hooks_.on_request(shared_from_this());
        }
        std::unique_lock lock(mutex_);
        if (response_) {
            HttpResponse response = std::move(*response_);
            response_.reset();
            lock.unlock();
            return queue(std::move(response));
        }
        if (transport_.closing_) {
            responded_ = true;
            lock.unlock();
            return queue(error_response(unavailable("the server is shutting down")));
        }
        MHD_suspend_connection(connection_);
        suspended_ = true;
        return MHD_YES;
    }

    // I/O thread (before the body): answer now; MHD sends it and closes the connection.
    MHD_Result refuse(const ApiError& error) {
        {
            std::lock_guard lock(mutex_);
            responded_ = true;
        }
        return queue(error_response(error));
    }

    // I/O thread: MHD's content reader for a streamed body.
    ssize_t read_body(char* buffer, size_t max) {
        for (;;) {
            if (out_offset_ < out_.size()) {
                const size_t count = std::min(max, out_.size() - out_offset_);
                std::memcpy(buffer, out_.data() + out_offset_, count);
                out_offset_ += count;
                if (out_offset_ == out_.size()) {
                    out_.clear();
                    out_offset_ = 0;
                }
                return ssize_t(count);
            }
            if (stream_ended_) return MHD_CONTENT_READER_END_OF_STREAM;
            BodyStream::Poll poll = BodyStream::Poll::End;
            try {
                poll = stream_->poll(out_, wake_);
            } catch (const std::exception& error) {
                log_error("{} {}: response stream failed: {}", request_.method, request_.path, error.what());
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            if (poll == BodyStream::Poll::End) stream_ended_ = true;
            if (poll != BodyStream::Poll::Pending) continue;
            std::lock_guard lock(mutex_);
            if (wake_pending_) {  // woken while polling
                wake_pending_ = false;
                continue;
            }
            if (transport_.closing_) return MHD_CONTENT_READER_END_WITH_ERROR;
            MHD_suspend_connection(connection_);
            suspended_ = true;
            return 0;
        }
    }

    // I/O thread: MHD ended the request (sent, failed, timed out, or the daemon stops).
    void end(bool completed) {
        std::function<void()> on_gone;
        uint64_t watch_id = 0;
        {
            std::lock_guard lock(mutex_);
            closed_ = true;
            watch_id = watch_id_;
            if (!responded_) on_gone = std::move(on_gone_);  // nobody will read the answer
        }
        if (watch_id != 0) transport_.monitor_.unwatch(watch_id);
        if (stream_) stream_->finished(completed && stream_ended_);
        if (on_gone) on_gone();
    }

    void resume_for_shutdown() {
        std::lock_guard lock(mutex_);
        resume_locked();
    }

  private:
    void resume_locked() {
        if (!suspended_) return;
        suspended_ = false;
        MHD_resume_connection(connection_);
    }

    void wake() {
        std::lock_guard lock(mutex_);
        if (closed_) return;
        if (suspended_)
            resume_locked();
        else
            wake_pending_ = true;
    }

    void client_gone() {
        std::function<void()> on_gone;
        {
            std::lock_guard lock(mutex_);
            on_gone = std::move(on_gone_);
        }
        if (on_gone) on_gone();
    }

    MHD_Result queue(HttpResponse response) {
        status_ = response.status;
        MHD_Response* mhd = nullptr;
        if (response.stream) {
            stream_ = std::move(response.stream);
            std::weak_ptr<Exchange> weak = weak_from_this();
            wake_ = [weak] {
                if (auto self = weak.lock()) self->wake();
            };
            auto* holder = new std::shared_ptr<Exchange>(shared_from_this());
            mhd = MHD_create_response_from_callback(
                MHD_SIZE_UNKNOWN, kStreamBlockBytes,
                [](void* cls, uint64_t, char* buffer, size_t max) {
                    return (*static_cast<std::shared_ptr<Exchange>*>(cls))->read_body(buffer, max);
                },
                holder, [](void* cls) { delete static_cast<std::shared_ptr<Exchange>*>(cls); });
            if (!mhd) delete holder;
        } else {
            auto* body = new std::string(std::move(response.body));
            mhd = MHD_create_response_from_buffer_with_free_callback_cls(
                body->size(), body->data(), [](void* cls) { delete static_cast<std::string*>(cls); }, body);
            if (!mhd) delete body;
        }
        if (!mhd) return MHD_NO;
        if (!response.content_type.empty())
            MHD_add_response_header(mhd, "Content-Type", response.content_type.c_str());
        for (const auto& [name, value] : response.headers)
            MHD_add_response_header(mhd, name.c_str(), value.c_str());
        const MHD_Result queued = MHD_queue_response(connection_, unsigned(response.status), mhd);
        MHD_destroy_response(mhd);
        return queued;
    }

    HttpTransport& transport_;
    MHD_Connection* const connection_;
    ConnectionMonitor::Connection* const record_;
    const int fd_;
    HttpRequest request_;

    // I/O thread only.
    bool dispatched_ = false;
    bool too_large_ = false;
    int status_ = 0;
    std::shared_ptr<BodyStream> stream_;
    std::function<void()> wake_;
    std::string out_;  // streamed bytes not yet taken by MHD
    size_t out_offset_ = 0;
    bool stream_ended_ = false;

    // Shared with workers, the engine and the monitor.
    std::mutex mutex_;
    std::optional<HttpResponse> response_;
    bool responded_ = false;
    bool suspended_ = false;
    bool wake_pending_ = false;
    bool closed_ = false;
    std::function<void()> on_gone_;
    uint64_t watch_id_ = 0;
};

// MHD's C callbacks; `cls` is the transport.
struct HttpTransport::Callbacks {
    static MHD_Result access(void* cls, MHD_Connection* connection, const char* url, const char* method,
                             const char*, const char* upload_data, size_t* upload_data_size, void** con_cls) {
        auto& transport = *static_cast<HttpTransport*>(cls);
        if (*con_cls == nullptr) {
            transport.begin_request(connection, url, method, con_cls);
            Exchange& exchange = **static_cast<std::shared_ptr<Exchange>*>(*con_cls);
            return refuse_early(transport, exchange);
        }
        Exchange& exchange = **static_cast<std::shared_ptr<Exchange>*>(*con_cls);
        if (*upload_data_size > 0) {
            exchange.append_body(upload_data, *upload_data_size);
            *upload_data_size = 0;
            return MHD_YES;
        }
        return exchange.on_request_complete();
    }

    // Refusals that need no body: an encoding we will not inflate, a declared length over the limit.
    static MHD_Result refuse_early(HttpTransport& transport, Exchange& exchange) {
        const HttpRequest& request = exchange.request();
        const std::string_view encoding = request.header("content-encoding");
        if (!encoding.empty() && !equals_ignoring_case(encoding, "identity"))
            return exchange.refuse(unsupported_media_type(std::string(encoding)));
        const std::string_view length = request.header("content-length");
        uint64_t declared = 0;
        auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), declared);
        if (!length.empty() && error == std::errc() && declared > transport.options_.max_body_bytes)
            return exchange.refuse(payload_too_large(transport.options_.max_body_bytes));
        return MHD_YES;
    }

    static void completed(void* cls, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode code) {
        if (*con_cls == nullptr) return;
        auto* holder = static_cast<std::shared_ptr<Exchange>*>(*con_cls);
        static_cast<HttpTransport*>(cls)->end_exchange(**holder, code == MHD_REQUEST_TERMINATED_COMPLETED_OK);
        delete holder;
        *con_cls = nullptr;
    }

    static void connection(void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
        auto& transport = *static_cast<HttpTransport*>(cls);
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
            *socket_context = transport.monitor_.add(socket_fd(connection));
        } else if (*socket_context != nullptr) {  // closed: MHD closes the socket after this returns
            transport.monitor_.remove(static_cast<ConnectionMonitor::Connection*>(*socket_context));
            *socket_context = nullptr;
        }
    }
};

std::string_view HttpRequest::header(std::string_view name) const {
    for (const auto& [key, value] : headers)
        if (key == name) return value;
    return {};
}

HttpTransport::HttpTransport(TransportOptions options, TransportHooks hooks)
    : options_(options),
      hooks_(std::move(hooks)),
      monitor_(options.read_budget_seconds, hooks_.on_connection_dropped) {}

HttpTransport::~HttpTransport() {
    stop();
    if (listen_fd_ >= 0) close(listen_fd_);
}

Result<int> HttpTransport::listen(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (int error = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); error != 0)
        return make_error("cannot bind {}:{}: {}", host, port, gai_strerror(error));
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, freeaddrinfo);
    const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return make_error(ErrorKind::Unavailable, "cannot create a socket: {}", std::strerror(errno));
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, options_.listen_backlog) != 0) {
        const int error = errno;
        close(fd);
        return make_error("cannot bind {}:{}: {}", host, port, std::strerror(error));
    }
    sockaddr_storage bound{};
    socklen_t bound_size = sizeof bound;
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_size);
    ipv6_ = bound.ss_family == AF_INET6;
    listen_fd_ = fd;
    return int(ntohs(ipv6_ ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port));
}

Status HttpTransport::start() {
    if (listen_fd_ < 0) return make_error(ErrorKind::Internal, "HttpTransport::start before listen");
    LMRUN_RETURN_IF_ERROR(monitor_.start());
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ipv6_) flags |= MHD_USE_IPv6;
    daemon_ = MHD_start_daemon(
        flags, 0, nullptr, nullptr, &Callbacks::access, this, MHD_OPTION_EXTERNAL_LOGGER, &log_from_mhd,
        nullptr, MHD_OPTION_LISTEN_SOCKET, listen_fd_, MHD_OPTION_THREAD_POOL_SIZE, options_.num_io_threads,
        MHD_OPTION_CONNECTION_LIMIT, options_.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
        options_.idle_timeout_seconds, MHD_OPTION_NOTIFY_COMPLETED, &Callbacks::completed, this,
        MHD_OPTION_NOTIFY_CONNECTION, &Callbacks::connection, this, MHD_OPTION_END);
    if (!daemon_) return make_error(ErrorKind::Unavailable, "cannot start the HTTP server (libmicrohttpd)");
    listen_fd_ = -1;  // MHD closes it when it stops
    return ok_status();
}

void HttpTransport::begin_request(MHD_Connection* connection, const char* url, const char* method,
                                  void** con_cls) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    auto* record = info ? static_cast<ConnectionMonitor::Connection*>(info->socket_context) : nullptr;
    auto exchange = std::make_shared<Exchange>(*this, connection, record);
    HttpRequest& request = exchange->mutable_request();
    request.method = method;
    request.path = url;
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, &collect_header, &request.headers);
    {
        std::lock_guard lock(exchanges_mutex_);
        exchanges_.insert(exchange.get());
    }
    *con_cls = new std::shared_ptr<Exchange>(std::move(exchange));
}

void HttpTransport::end_exchange(Exchange& exchange, bool completed) {
    {
        std::lock_guard lock(exchanges_mutex_);
        exchanges_.erase(&exchange);
    }
    exchange.end(completed);
    if (exchange.record()) monitor_.reading(exchange.record());  // keep-alive: the next request's budget
    if (exchange.dispatched()) --num_open_exchanges_;
    if (hooks_.on_completed) hooks_.on_completed(exchange.request(), exchange.status());
}

void HttpTransport::stop() {
    if (!daemon_) return;
    closing_ = true;
    {
        // Whatever waits is released now: it sees closing_ and ends instead of suspending again.
        std::lock_guard lock(exchanges_mutex_);
        for (Exchange* exchange : exchanges_) exchange->resume_for_shutdown();
    }
    // Give the I/O threads a moment to send what was just released.
    for (int i = 0; i < 25 && num_open_exchanges_ > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
}

}  // namespace lmrun::server
