// What the HTTP endpoint handlers share: the prompt processor (tokenizer, chat
// template, context checks), the engine thread, the metrics, the worker pool they
// run on, and small helpers to answer with JSON or an OpenAI error. Handlers run
// on a worker thread; the generation handlers may answer later (see
// generation_responder.h). Internal to src/server.
#pragma once

#include <memory>
#include <string>

#include "server/api_error.h"
#include "server/async_engine.h"
#include "server/http_exchange.h"
#include "server/metrics.h"
#include "server/openai_response.h"
#include "server/prompt_processor.h"
#include "server/worker_pool.h"

namespace lmrun::server {

struct EndpointContext {
    const PromptProcessor& prompts;
    AsyncEngine& engine;
    ServerMetrics& metrics;
    WorkerPool& workers;
};

using ExchangePtr = std::shared_ptr<HttpExchange>;

HttpResponse json_response(const Json& body, int status = 200);
// The body as a JSON object: bounded nesting, linear time, every byte of every string kept.
// On failure, the error to answer (400).
std::optional<ApiError> parse_body(const HttpRequest& request, Json& body);
// The request's "model" must be empty, the served name, or the model path.
std::optional<ApiError> check_model(const EndpointContext& context, const std::string& model);
// "cmpl-" + 32 random hex digits.
std::string make_request_id(const char* prefix);
int64_t unix_time_seconds();

void handle_completions(EndpointContext& context, const ExchangePtr& exchange);
void handle_chat_completions(EndpointContext& context, const ExchangePtr& exchange);
HttpResponse handle_models(EndpointContext& context, const HttpRequest& request);
HttpResponse handle_tokenize(EndpointContext& context, const HttpRequest& request);
HttpResponse handle_detokenize(EndpointContext& context, const HttpRequest& request);

}  // namespace lmrun::server
