// POST /v1/completions and POST /v1/chat/completions: parse and validate on a
// worker thread, tokenize, compile the output constraint (a bad one is a 400
// naming it), then hand over to the generation responder.
#include "server/generation_responder.h"
#include "structured/grammar_compiler.h"

namespace lmrun::server {
namespace {

// Compiles the request's output constraint here, on the worker (the engine then finds it
// cached), and sets it on the params.
std::optional<ApiError> apply_constraint(EndpointContext& context,
                                         const std::optional<RequestedConstraint>& constraint,
                                         SamplingParams& params) {
    if (!constraint) return std::nullopt;
    auto compiler = context.engine.grammar_compiler();
    if (!compiler.ok()) return invalid_request(compiler.error().message, constraint->field);
    auto compiled = (*compiler)->compile(constraint->params);
    if (!compiled.ok()) return invalid_request(compiled.error().message, constraint->field);
    params.structured_outputs = constraint->params;
    return std::nullopt;
}

// Tool choice against the server's features; with "required" or a named function the
// output is constrained to the calls' JSON.
std::optional<ApiError> plan_tools(const ModelInfo& info, ChatRequest& request, ChatOutputOptions& output) {
    const ToolRequest& tools = request.tools;
    output.tool_choice = tools.choice;
    output.function_name = tools.function_name;
    if (tools.choice == ToolChoice::Auto) {
        auto format = tool_call_format_named(info.tool_call_parser);
        if (!info.enable_auto_tool_choice || !format) {
            return invalid_request(
                "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                "tool_choice");
        }
        output.tool_call_format = *format;
    }
    if (tools.choice == ToolChoice::Required || tools.choice == ToolChoice::Named) {
        if (request.constraint) {
            return invalid_request("tool_choice \"required\" or a named function cannot be combined with " +
                                       request.constraint->field,
                                   request.constraint->field);
        }
        request.constraint = RequestedConstraint{
            structured::StructuredOutputsParams::json_schema(tool_call_schema(tools).dump()), "tool_choice"};
    }
    return std::nullopt;
}

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
    if (auto error = apply_constraint(context, request.constraint, request.params)) return error;
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
    const ModelInfo& info = context.prompts.info();
    ChatOutputOptions output;
    if (auto error = plan_tools(info, request, output)) return error;
    EngineRequest engine_request;
    if (auto error = context.prompts.encode_chat(request, engine_request.prompt_ids)) return error;
    const Tokenizer* tokenizer = context.prompts.tokenizer();
    if (info.reasoning_parser == "qwen3" && tokenizer) {
        output.reasoning = true;
        output.thinking = qwen3_prompt_opens_reasoning(*tokenizer, engine_request.prompt_ids);
        // The constraint applies to the answer, after the thinking.
        if (output.thinking && request.constraint)
            request.constraint->params.activate_after_token_id = qwen3_reasoning_end_token(*tokenizer);
    }
    if (auto error = apply_constraint(context, request.constraint, request.params)) return error;
    if (output.reasoning || output.tool_choice != ToolChoice::None) plan.chat_output = output;
    engine_request.params = request.params;
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
