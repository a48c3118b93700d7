// POST /v1/completions and POST /v1/chat/completions: parse and validate on the
// HTTP thread, tokenize, then hand over to the generation responder.
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

}  // namespace

void handle_completions(EndpointContext& context, const httplib::Request& req, httplib::Response& res) {
    Json body;
    if (!parse_body(req, res, body)) return;
    CompletionRequest request;
    if (auto error = parse_completion_request(body, request)) return send_error(res, *error);
    if (!check_model(context, request.model, res)) return;
    GenerationPlan plan = plan_for(context, request, ApiKind::Completion);
    for (const PromptInput& prompt : request.prompts) {
        EngineRequest engine_request;
        engine_request.params = request.params;
        if (auto error = context.prompts.encode_prompt(prompt, request.add_special_tokens,
                                                       engine_request.prompt_ids)) {
            return send_error(res, *error);
        }
        if (auto error = context.prompts.fit_to_context(engine_request.prompt_ids, request.max_tokens_given,
                                                        "prompt", engine_request.params)) {
            return send_error(res, *error);
        }
        if (request.echo) {
            plan.echo_prefixes.push_back(prompt.is_token_ids ? context.prompts.decode(prompt.token_ids, false)
                                                             : prompt.text);
        }
        plan.requests.push_back(std::move(engine_request));
    }
    respond_generation(context, std::move(plan), res);
}

void handle_chat_completions(EndpointContext& context, const httplib::Request& req, httplib::Response& res) {
    Json body;
    if (!parse_body(req, res, body)) return;
    ChatRequest request;
    if (auto error = parse_chat_request(body, request)) return send_error(res, *error);
    if (!check_model(context, request.model, res)) return;
    GenerationPlan plan = plan_for(context, request, ApiKind::Chat);
    EngineRequest engine_request;
    engine_request.params = request.params;
    if (auto error = context.prompts.encode_chat(request, engine_request.prompt_ids))
        return send_error(res, *error);
    if (auto error = context.prompts.fit_to_context(engine_request.prompt_ids, request.max_tokens_given,
                                                    "messages", engine_request.params)) {
        return send_error(res, *error);
    }
    plan.requests.push_back(std::move(engine_request));
    respond_generation(context, std::move(plan), res);
}

}  // namespace lmrun::server
