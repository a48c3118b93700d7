#include "router/upstream_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

#include "core/logging.h"

namespace lmrun::router {

struct UpstreamClient::Transfer {
    uint64_t id = 0;
    CURL* easy = nullptr;
    curl_slist* header_list = nullptr;
    UpstreamRequest request;  // owns the body curl sends from
    std::shared_ptr<UpstreamHandler> handler;
    HeaderList headers;  // of the response being received
    int status = 0;
    bool response_delivered = false;
    bool paused = false;
    char error[CURL_ERROR_SIZE] = {0};

    ~Transfer() {
        if (easy) curl_easy_cleanup(easy);
        if (header_list) curl_slist_free_all(header_list);
    }

    void deliver_response() {
        if (response_delivered) return;
        response_delivered = true;
        handler->on_response(status, headers);
    }
};

namespace {

CURLM* as_multi(void* multi) {
    return static_cast<CURLM*>(multi);
}

std::string trim(std::string_view text) {
    size_t begin = 0, end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    return std::string(text.substr(begin, end - begin));
}

// One header line of the response ("HTTP/1.1 200 OK", "Name: value", or the blank line ending them).
size_t on_header_line(char* data, size_t size, size_t count, void* user) {
    auto& transfer = *static_cast<UpstreamClient::Transfer*>(user);
    const std::string_view line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
        transfer.headers.clear();  // a new response (after a 100 Continue, say)
        const size_t space = line.find(' ');
        transfer.status =
            space == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(space + 1, 3)).c_str());
    } else if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
        std::string name = trim(line.substr(0, colon));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return char(std::tolower(c)); });
        transfer.headers.emplace_back(std::move(name), trim(line.substr(colon + 1)));
    } else if (trim(line).empty() && transfer.status >= 200) {
        transfer.deliver_response();
    }
    return size * count;
}

size_t on_body_bytes(char* data, size_t size, size_t count, void* user) {
    auto& transfer = *static_cast<UpstreamClient::Transfer*>(user);
    transfer.deliver_response();
    if (!transfer.handler->on_body(std::string_view(data, size * count))) {
        transfer.paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    return size * count;
}

UpstreamResult result_of(CURLcode code, CURL* easy, int status, const char* error_buffer) {
    UpstreamResult result;
    result.status = status;
    if (code == CURLE_OK) return result;
    result.error = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
    long request_bytes = 0;  // of the request sent (0: it never left)
    curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_bytes);
    switch (code) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
            result.failure = UpstreamFailure::Connect;
            break;
        case CURLE_OPERATION_TIMEDOUT:
            // Sent but not answered in time (a hung worker) is a timeout, not a failed connection.
            result.failure = request_bytes == 0 ? UpstreamFailure::Connect : UpstreamFailure::Timeout;
            break;
        default:
            result.failure = UpstreamFailure::Transfer;
    }
    return result;
}

}  // namespace

UpstreamClient::UpstreamClient() {
    static std::once_flag global_init;
    std::call_once(global_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi_ = curl_multi_init();
    // Idle connections kept for reuse; beyond this the oldest is closed.
    curl_multi_setopt(as_multi(multi_), CURLMOPT_MAXCONNECTS, 1024L);
}

UpstreamClient::~UpstreamClient() {
    stop();
    curl_multi_cleanup(as_multi(multi_));
}

Status UpstreamClient::start() {
    if (!multi_) return make_error(ErrorKind::Internal, "cannot create a libcurl multi handle");
    thread_ = std::thread([this] { run(); });
    return ok_status();
}

void UpstreamClient::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    curl_multi_wakeup(as_multi(multi_));
    if (thread_.joinable()) thread_.join();
    // Whatever was still queued (never started) ends here.
    std::deque<Command> left;
    {
        std::lock_guard lock(mutex_);
        left.swap(commands_);
    }
    for (Command& command : left) {
        if (command.kind == Command::Kind::Submit) {
            --num_active_;
            command.transfer->handler->on_done({UpstreamFailure::Cancelled, "the router is stopping", 0});
        }
    }
}

void UpstreamClient::post(Command command) {
    {
        std::lock_guard lock(mutex_);
        if (!stopping_ || command.kind != Command::Kind::Submit) {
            commands_.push_back(std::move(command));
            curl_multi_wakeup(as_multi(multi_));
            return;
        }
    }
    --num_active_;
    command.transfer->handler->on_done({UpstreamFailure::Cancelled, "the router is stopping", 0});
}

uint64_t UpstreamClient::submit(UpstreamRequest request, std::shared_ptr<UpstreamHandler> handler) {
    auto transfer = std::make_unique<Transfer>();
    transfer->id = next_id_++;
    transfer->request = std::move(request);
    transfer->handler = std::move(handler);
    const uint64_t id = transfer->id;
    ++num_active_;
    post(Command{Command::Kind::Submit, id, std::move(transfer), {}});
    return id;
}

void UpstreamClient::cancel(uint64_t id, std::string reason) {
    post(Command{Command::Kind::Cancel, id, nullptr, std::move(reason)});
}

void UpstreamClient::resume(uint64_t id) {
    post(Command{Command::Kind::Resume, id, nullptr, {}});
}

void UpstreamClient::add(std::unique_ptr<Transfer> transfer) {
    CURL* easy = curl_easy_init();
    transfer->easy = easy;
    const UpstreamRequest& request = transfer->request;
    curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(easy, CURLOPT_PRIVATE, transfer.get());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->error);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, long(request.connect_timeout_seconds * 1000));
    if (request.timeout_seconds > 0)
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, long(request.timeout_seconds * 1000));
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &on_header_line);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, transfer.get());
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body_bytes);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, transfer.get());
    if (request.method == "POST") {
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.size()));
    } else if (request.method != "GET") {
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    // No "Expect: 100-continue" round trip before a large body: the worker reads it anyway.
    transfer->header_list = curl_slist_append(transfer->header_list, "Expect:");
    std::string line;
    for (const auto& [name, value] : request.headers) {
        line.assign(name).append(": ").append(value);
        transfer->header_list = curl_slist_append(transfer->header_list, line.c_str());
    }
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, transfer->header_list);
    const uint64_t id = transfer->id;
    transfers_[id] = std::move(transfer);
    if (curl_multi_add_handle(as_multi(multi_), easy) != CURLM_OK)
        finish(id, {UpstreamFailure::Connect, "libcurl refused the transfer", 0});
}

void UpstreamClient::finish(uint64_t id, UpstreamResult result) {
    auto found = transfers_.find(id);
    if (found == transfers_.end()) return;
    std::unique_ptr<Transfer> transfer = std::move(found->second);
    transfers_.erase(found);
    curl_multi_remove_handle(as_multi(multi_), transfer->easy);
    if (result.failure == UpstreamFailure::None) transfer->deliver_response();  // an empty body
    if (result.status == 0) result.status = transfer->status;
    --num_active_;
    transfer->handler->on_done(result);
}

void UpstreamClient::run_commands() {
    std::deque<Command> commands;
    {
        std::lock_guard lock(mutex_);
        commands.swap(commands_);
    }
    for (Command& command : commands) {
        switch (command.kind) {
            case Command::Kind::Submit:
                add(std::move(command.transfer));
                break;
            case Command::Kind::Cancel:
                finish(command.id, {UpstreamFailure::Cancelled, command.reason, 0});
                break;
            case Command::Kind::Resume:
                if (auto found = transfers_.find(command.id);
                    found != transfers_.end() && found->second->paused) {
                    found->second->paused = false;
                    // May call on_body at once, which may pause it again.
                    curl_easy_pause(found->second->easy, CURLPAUSE_CONT);
                }
                break;
        }
    }
}

void UpstreamClient::read_done_transfers() {
    int num_messages = 0;
    while (CURLMsg* message = curl_multi_info_read(as_multi(multi_), &num_messages)) {
        if (message->msg != CURLMSG_DONE) continue;
        Transfer* transfer = nullptr;
        curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &transfer);
        UpstreamResult result =
            result_of(message->data.result, transfer->easy, transfer->status, transfer->error);
        finish(transfer->id, std::move(result));
    }
}

void UpstreamClient::run() {
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) break;
        }
        run_commands();
        int running = 0;
        curl_multi_perform(as_multi(multi_), &running);
        read_done_transfers();
        curl_multi_poll(as_multi(multi_), nullptr, 0, 1000, nullptr);
    }
    std::vector<uint64_t> ids;
    ids.reserve(transfers_.size());
    for (const auto& [id, transfer] : transfers_) ids.push_back(id);
    for (uint64_t id : ids) finish(id, {UpstreamFailure::Cancelled, "the router is stopping", 0});
}

namespace {

class BufferedHandler final : public UpstreamHandler {
  public:
    BufferedHandler(std::function<void(BufferedResponse)> done, size_t max_body_bytes)
        : done_(std::move(done)), max_body_bytes_(max_body_bytes) {}

    void on_response(int, const HeaderList&) override {}
    bool on_body(std::string_view bytes) override {
        if (response_.body.size() + bytes.size() > max_body_bytes_) {
            too_large_ = true;
            return true;  // dropped; the result reports it
        }
        response_.body.append(bytes);
        return true;
    }
    void on_done(const UpstreamResult& result) override {
        response_.result = result;
        if (too_large_ && result.failure == UpstreamFailure::None) {
            response_.result.failure = UpstreamFailure::Transfer;
            response_.result.error = "response larger than " + std::to_string(max_body_bytes_) + " bytes";
            response_.body.clear();
        }
        done_(std::move(response_));
    }

  private:
    std::function<void(BufferedResponse)> done_;
    size_t max_body_bytes_;
    bool too_large_ = false;
    BufferedResponse response_;
};

}  // namespace

std::shared_ptr<UpstreamHandler> buffered_handler(std::function<void(BufferedResponse)> done,
                                                  size_t max_body_bytes) {
    return std::make_shared<BufferedHandler>(std::move(done), max_body_bytes);
}

}  // namespace lmrun::router
