// lmrun serve: the OpenAI-compatible HTTP server. Checks its options, loads the
// model, starts the engine thread and the HTTP server, and runs until
// SIGINT/SIGTERM, when it stops taking requests and lets in-flight ones finish
// until --shutdown-timeout. Exit code 0 when they all did, 4 (kExitRuntime) when
// some had to be aborted at the deadline; 1 for a bad option, 2 for a model that
// cannot be loaded. Logs "listening on http://HOST:PORT" once it accepts requests.
// With --data-parallel-size N > 1 it runs N replicas behind a router instead
// (serve_data_parallel.h).
#include <csignal>
#include <filesystem>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/serve_data_parallel.h"
#include "cli/serve_until_signal.h"
#include "cli/server_limits.h"
#include "core/logging.h"
#include "parallel/placement.h"
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
    int64_t max_request_body_mb = 64;
    CLI::Option* max_connections_option = nullptr;  // tells whether --max-connections was given
    std::string reasoning_parser;                   // "" or qwen3
    std::string tool_call_parser;                   // "" or hermes, llama3_json
    bool enable_auto_tool_choice = false;
    int data_parallel_size = 1;
    std::string data_parallel_policy = "cache_aware";
};

// The ranges are checked while parsing (add_serve_command); this derives what they imply.
Status check_serve_args(ServeArgs& args) {
    args.http.max_request_body_bytes = size_t(args.max_request_body_mb) << 20;
    if (!args.reasoning_parser.empty() && args.reasoning_parser != "qwen3")
        return make_error("--reasoning-parser must be qwen3, got \"{}\"", args.reasoning_parser);
    if (!args.tool_call_parser.empty() && args.tool_call_parser != "hermes" &&
        args.tool_call_parser != "llama3_json")
        return make_error("--tool-call-parser must be hermes or llama3_json, got \"{}\"",
                          args.tool_call_parser);
    if (args.enable_auto_tool_choice && args.tool_call_parser.empty())
        return make_error("--enable-auto-tool-choice needs --tool-call-parser");
    return fit_connections_to_file_limit(args.http.max_connections, args.max_connections_option->count() > 0);
}

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

int run_serve(ServeArgs& args) {
    if (Status valid = check_serve_args(args); !valid.ok())
        return log_error("{}", valid.error().message), kExitUsage;
    if (args.data_parallel_size > 1) {
        return run_data_parallel_serve(DataParallelArgs{args.data_parallel_size, args.data_parallel_policy,
                                                        args.http, args.engine,
                                                        args.shutdown_timeout_seconds});
    }
    const sigset_t signals = block_shutdown_signals();

    // Creating a tensor-parallel engine pins this thread to rank 0's CPUs; the engine thread
    // (started below) inherits that, but the HTTP threads must not: on a 2-core machine they
    // would share rank 0's one core with its compute, and /health would wait behind the steps.
    const std::vector<int> front_end_cpus = parallel::current_cpus();
    auto engine = LLMEngine::create(args.engine.to_config());
    if (!engine.ok()) return log_error("{}", engine.error().message), exit_code_for(engine.error());
    auto chat_template = load_served_chat_template(args, engine.value()->tokenizer());
    if (!chat_template.ok()) return log_error("{}", chat_template.error().message), kExitModel;
    server::ModelInfo info;
    info.served_name =
        args.served_model_name.empty() ? default_model_name(args.engine.model) : args.served_model_name;
    info.model_dir = args.engine.model;
    info.max_model_len = engine.value()->max_model_len();
    info.vocab_size = engine.value()->model_config().vocab_size;
    info.created_unix = std::time(nullptr);
    info.reasoning_parser = args.reasoning_parser;
    info.tool_call_parser = args.tool_call_parser;
    info.enable_auto_tool_choice = args.enable_auto_tool_choice;
    server::PromptProcessor prompts(engine.value()->tokenizer(), std::move(chat_template).value(), info);
    server::ServerMetrics metrics(info.served_name);
    server::AsyncEngineOptions engine_options{args.engine.max_num_seqs, args.max_queued_requests};
    server::AsyncEngine async_engine(std::move(engine).value(), engine_options, metrics);
    async_engine.start();
    parallel::pin_current_thread(front_end_cpus);
    server::HttpServer http(args.http, prompts, async_engine, metrics);
    auto port = http.bind();
    if (!port.ok()) return log_error("{}", port.error().message), kExitUsage;
    log_info("serving {} (max_model_len {}) on http://{}:{}", info.served_name, info.max_model_len,
             args.http.host, port.value());
    log_info("listening on http://{}:{}", args.http.host, port.value());
    ServeWatch watch;
    watch.serve = [&] { return http.serve(); };
    watch.shutdown = [&](double timeout_seconds) { return http.shutdown(timeout_seconds); };
    watch.shutdown_timeout_seconds = args.shutdown_timeout_seconds;
    // An engine that turned fatal (a tensor-parallel rank died) stops the server: the requests in
    // flight already ended with an error.
    watch.stopped_itself = [&] {
        if (async_engine.healthy()) return false;
        log_error("the engine failed: shutting the server down");
        http.shutdown(1.0);
        return true;
    };
    const ServeOutcome outcome = serve_until_signal(signals, watch);
    async_engine.stop();
    if (!async_engine.healthy()) return log_error("server stopped: the engine failed"), kExitRuntime;
    return exit_code_after_serving(outcome.served, outcome.drained, "server",
                                   "some requests were aborted at the --shutdown-timeout deadline");
}

}  // namespace

CommandRunner add_serve_command(CLI::App& app) {
    auto args = std::make_shared<ServeArgs>();
    if (const char* key = std::getenv("LMRUN_API_KEY")) args->http.api_key = key;
    CLI::App* command = app.add_subcommand("serve", "Serve an OpenAI-compatible HTTP API");
    args->engine.add_to(*command);
    command->add_option("--host", args->http.host, "Address to listen on")->capture_default_str();
    command->add_option("--port", args->http.port, "Port (0 = any free port)")
        ->check(integer_range(0, 65535))
        ->capture_default_str();
    command->add_option("--served-model-name", args->served_model_name,
                        "Model name clients use (default: folder name)");
    command->add_option("--reasoning-parser", args->reasoning_parser,
                        "qwen3: split <think>...</think> into message.reasoning_content");
    command->add_option("--tool-call-parser", args->tool_call_parser,
                        "Read tool calls from the model's output: hermes (Qwen) or llama3_json");
    command->add_flag(
        "--enable-auto-tool-choice", args->enable_auto_tool_choice,
        "Allow tool_choice \"auto\": the model decides, its calls are parsed (needs --tool-call-parser)");
    command->add_option(
        "--api-key", args->http.api_key,
        "Require 'Authorization: Bearer KEY' on /v1, /tokenize, /detokenize (or LMRUN_API_KEY)");
    command->add_flag("--allow-unauthenticated-tokenize", args->http.allow_unauthenticated_tokenize,
                      "With --api-key, leave /tokenize and /detokenize open (as vLLM does)");
    command
        ->add_option("--max-queued-requests", args->max_queued_requests,
                     "Sequences admitted beyond --max-num-seqs; more get 429")
        ->check(integer_range(0, int64_t(1) << 20))
        ->capture_default_str();
    command
        ->add_option("--http-threads", args->http.http_threads,
                     "Worker threads that parse, tokenize and build responses (connections need none)")
        ->check(integer_range(1, 1024))
        ->capture_default_str();
    args->max_connections_option =
        command
            ->add_option("--max-connections", args->http.max_connections,
                         "Open connections at most; more wait in the listen backlog")
            ->check(integer_range(1, 1 << 20))
            ->capture_default_str();
    command
        ->add_option("--max-request-body-mb", args->max_request_body_mb,
                     "Largest request body in MiB (chunked or not); larger gets 413")
        ->check(integer_range(1, 4096))
        ->capture_default_str();
    command
        ->add_option(
            "--request-timeout", args->http.request_timeout_seconds,
            "Seconds a client has to send a whole request (headers and body); slower ones are dropped")
        ->check(finite_range(0.1, 86400))
        ->capture_default_str();
    command
        ->add_option("--idle-timeout", args->http.idle_timeout_seconds,
                     "Seconds without a byte either way before a connection is closed")
        ->check(integer_range(1, 86400))
        ->capture_default_str();
    command->add_option("--chat-template", args->chat_template_file,
                        "Jinja chat template file (default: the tokenizer's)");
    command
        ->add_option("--shutdown-timeout", args->shutdown_timeout_seconds,
                     "Seconds in-flight requests may take to finish on SIGINT/SIGTERM; then they are "
                     "aborted and the exit code is 4")
        ->check(finite_range(0, 86400))
        ->capture_default_str();
    command
        ->add_option("--data-parallel-size", args->data_parallel_size,
                     "Replicas of the engine on this machine, each on its share of the cores and of the KV "
                     "budget, behind one port")
        ->check(integer_range(1, 1024))
        ->capture_default_str();
    command
        ->add_option("--data-parallel-policy", args->data_parallel_policy,
                     "With --data-parallel-size: round_robin, least_load, session or cache_aware")
        ->check(CLI::IsMember({"round_robin", "least_load", "session", "cache_aware"}))
        ->capture_default_str();
    return [args] { return run_serve(*args); };
}

}  // namespace lmrun::cli
