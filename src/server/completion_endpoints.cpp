// POST /v1/completions and POST /v1/chat/completions: parse and validate on a
// worker thread, tokenize, then hand over to the generation responder.
#include "server/generation_responder.h"

namespace lmrun::server {
namespace {

GenerationPlan plan_for(const EndpointContext& context, const GenerationRequest& request, ApiKind kind) {
    GenerationPlan plan;
    plan.kind = kind;
    plan.header.id = make_request_id(kind == ApiKind::Chat ? "chatcmpl-" : "cmpl-");
    plan.header.model = context.prompts.info().served_name;
    plan.header.created = unix_time_seconds();
    plan.n = request.params.n;
    plan.stream = request.stream;
    plan.include_usage = request.stream && request.include_usage;
    plan.logprobs = request.params.logprobs.has_value();
    plan.return_token_ids = request.return_token_ids;
    return plan;
}

// Everything up to the engine; on failure the error to answer.
std::optional<ApiError> plan_completion(EndpointContext& context, const HttpRequest& http_request,
                                        GenerationPlan& plan) {
    Json body;
    if (auto error = parse_body(http_request, body)) return error;
    CompletionRequest request;
    if (auto error = parse_completion_request(body, request)) return error;
    if (auto error = check_model(context, request.model)) return error;
    plan = plan_for(context, request, ApiKind::Completion);
    for (const PromptInput& prompt : request.prompts) {
        EngineRequest engine_request;
        engine_request.params = request.params;
        if (auto error = context.prompts.encode_prompt(prompt, request.add_special_tokens,
                                                       engine_request.prompt_ids)) {
            return error;
        }
        if (auto error = context.prompts.fit_to_context(engine_request.prompt_ids, request.max_tokens_given,
                                                        "prompt", engine_request.params)) {
            return error;
        }
        if (request.echo) {
            plan.echo_prefixes.push_back(prompt.is_token_ids ? context.prompts.decode(prompt.token_ids, false)
                                                             : prompt.text);
        }
        plan.requests.push_back(std::move(engine_request));
    }
    return std::nullopt;
}

std::optional<ApiError> plan_chat(EndpointContext& context, const HttpRequest& http_request,
                                  GenerationPlan& plan) {
    Json body;
    if (auto error = parse_body(http_request, body)) return error;
    ChatRequest request;
    if (auto error = parse_chat_request(body, request)) return error;
    if (auto error = check_model(context, request.model)) return error;
    plan = plan_for(context, request, ApiKind::Chat);
    EngineRequest engine_request;
    engine_request.params = request.params;
    if (auto error = context.prompts.encode_chat(request, engine_request.prompt_ids)) return error;
    if (auto error = context.prompts.fit_to_context(engine_request.prompt_ids, request.max_tokens_given,
                                                    "messages", engine_request.params)) {
        return error;
    }
    plan.requests.push_back(std::move(engine_request));
    return std::nullopt;
}

}  // namespace

void handle_completions(EndpointContext& context, const ExchangePtr& exchange) {
    GenerationPlan plan;
    if (auto error = plan_completion(context, exchange->request(), plan))
        return exchange->respond(error_response(*error));
    respond_generation(context, std::move(plan), exchange);
}

void handle_chat_completions(EndpointContext& context, const ExchangePtr& exchange) {
    GenerationPlan plan;
    if (auto error = plan_chat(context, exchange->request(), plan))
        return exchange->respond(error_response(*error));
    respond_generation(context, std::move(plan), exchange);
}

}  // namespace lmrun::server
