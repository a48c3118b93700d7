// What the HTTP endpoint handlers share: the prompt processor (tokenizer, chat
// template, context checks), the engine thread, the metrics, and small helpers
// to answer with JSON or an OpenAI error. Internal to src/server.
#pragma once

#include <string>

#include <httplib.h>

#include "server/api_error.h"
#include "server/async_engine.h"
#include "server/metrics.h"
#include "server/openai_response.h"
#include "server/prompt_processor.h"

namespace lmrun::server {

struct EndpointContext {
    const PromptProcessor& prompts;
    AsyncEngine& engine;
    ServerMetrics& metrics;
};

void send_json(httplib::Response& res, const Json& body, int status = 200);
void send_error(httplib::Response& res, const ApiError& error);
// Parses the body as JSON; on failure answers 400 and returns false.
bool parse_body(const httplib::Request& req, httplib::Response& res, Json& body);
// The request's "model" must be empty, the served name, or the model path.
bool check_model(const EndpointContext& context, const std::string& model, httplib::Response& res);
// "cmpl-" + 32 random hex digits.
std::string make_request_id(const char* prefix);
int64_t unix_time_seconds();

void handle_completions(EndpointContext& context, const httplib::Request& req, httplib::Response& res);
void handle_chat_completions(EndpointContext& context, const httplib::Request& req, httplib::Response& res);
void handle_models(EndpointContext& context, const httplib::Request& req, httplib::Response& res);
void handle_tokenize(EndpointContext& context, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(EndpointContext& context, const httplib::Request& req, httplib::Response& res);

}  // namespace lmrun::server
