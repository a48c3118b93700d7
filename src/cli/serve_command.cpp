// lmrun serve: the OpenAI-compatible HTTP server. Loads the model, starts the
// engine thread and the HTTP workers, and runs until SIGINT/SIGTERM, when it
// stops taking requests, lets in-flight ones finish (up to --shutdown-timeout)
// and exits 0. Logs "listening on http://HOST:PORT" once it accepts requests.
#include <csignal>
#include <filesystem>
#include <thread>

#include <pthread.h>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "core/logging.h"
#include "server/http_server.h"

namespace lmrun::cli {
namespace {

struct ServeArgs {
    EngineOptions engine;
    server::HttpServerOptions http;
    std::string served_model_name;
    std::string chat_template_file;
    int64_t max_queued_requests = 256;
    double shutdown_timeout_seconds = 30;
};

std::string default_model_name(const std::string& model_dir) {
    std::filesystem::path path = std::filesystem::path(model_dir).lexically_normal();
    if (path.filename().empty()) path = path.parent_path();
    return path.filename().string();
}

Result<std::optional<ChatTemplate>> load_served_chat_template(const ServeArgs& args,
                                                              const Tokenizer* tokenizer) {
    LMRUN_ASSIGN_OR_RETURN(
        std::optional<ChatTemplate> chat_template,
        load_chat_template(args.chat_template_file, tokenizer ? &tokenizer->tokenizer_config() : nullptr));
    if (!chat_template)
        log_warn("no chat template: /v1/chat/completions answers 400 (pass --chat-template FILE)");
    return chat_template;
}

// SIGINT/SIGTERM are blocked in every thread and taken here, where a shutdown may block.
void watch_signals(const sigset_t& signals, const std::atomic<bool>& serving, server::HttpServer& http,
                   double grace_seconds) {
    const timespec poll = {0, 200'000'000};  // 200 ms
    while (serving) {
        int signal = sigtimedwait(&signals, nullptr, &poll);
        if (signal < 0) continue;
        log_info("received {}: shutting down (in-flight requests have {} s to finish)",
                 signal == SIGINT ? "SIGINT" : "SIGTERM", grace_seconds);
        http.shutdown(grace_seconds);
        return;
    }
}

int run_serve(ServeArgs& args) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts, so all inherit it
    std::signal(SIGPIPE, SIG_IGN);                  // a client that hangs up is a failed write, not a crash

    auto engine = LLMEngine::create(args.engine.to_config());
    if (!engine.ok()) return log_error("{}", engine.error().message), 1;
    auto chat_template = load_served_chat_template(args, engine.value()->tokenizer());
    if (!chat_template.ok()) return log_error("{}", chat_template.error().message), 2;
    server::ModelInfo info;
    info.served_name =
        args.served_model_name.empty() ? default_model_name(args.engine.model) : args.served_model_name;
    info.model_dir = args.engine.model;
    info.max_model_len = engine.value()->max_model_len();
    info.vocab_size = engine.value()->model_config().vocab_size;
    info.created_unix = std::time(nullptr);
    server::PromptProcessor prompts(engine.value()->tokenizer(), std::move(chat_template).value(), info);
    server::ServerMetrics metrics(info.served_name);
    server::AsyncEngineOptions engine_options{args.engine.max_num_seqs, args.max_queued_requests};
    server::AsyncEngine async_engine(std::move(engine).value(), engine_options, metrics);
    server::HttpServer http(args.http, prompts, async_engine, metrics);
    auto port = http.bind();
    if (!port.ok()) return log_error("{}", port.error().message), 1;
    async_engine.start();
    std::atomic<bool> serving{true};
    std::thread signal_thread([&] { watch_signals(signals, serving, http, args.shutdown_timeout_seconds); });
    log_info("serving {} (max_model_len {}) on http://{}:{}", info.served_name, info.max_model_len,
             args.http.host, port.value());
    log_info("listening on http://{}:{}", args.http.host, port.value());
    http.serve();
    serving = false;
    signal_thread.join();
    async_engine.stop();
    log_info("server stopped");
    return 0;
}

}  // namespace

CommandRunner add_serve_command(CLI::App& app) {
    auto args = std::make_shared<ServeArgs>();
    if (const char* key = std::getenv("LMRUN_API_KEY")) args->http.api_key = key;
    CLI::App* command = app.add_subcommand("serve", "Serve an OpenAI-compatible HTTP API");
    args->engine.add_to(*command);
    command->add_option("--host", args->http.host, "Address to listen on")->capture_default_str();
    command->add_option("--port", args->http.port, "Port (0 = any free port)")->capture_default_str();
    command->add_option("--served-model-name", args->served_model_name,
                        "Model name clients use (default: folder name)");
    command->add_option("--api-key", args->http.api_key,
                        "Require 'Authorization: Bearer KEY' on /v1 (or LMRUN_API_KEY)");
    command
        ->add_option("--max-queued-requests", args->max_queued_requests,
                     "Sequences admitted beyond --max-num-seqs; more get 429")
        ->capture_default_str();
    command
        ->add_option("--http-threads", args->http.http_threads,
                     "HTTP worker threads (concurrent connections)")
        ->capture_default_str();
    command->add_option("--chat-template", args->chat_template_file,
                        "Jinja chat template file (default: the tokenizer's)");
    command
        ->add_option("--shutdown-timeout", args->shutdown_timeout_seconds,
                     "Seconds in-flight requests may take to finish on SIGINT/SIGTERM")
        ->capture_default_str();
    return [args] { return run_serve(*args); };
}

}  // namespace lmrun::cli
