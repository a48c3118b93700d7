#include "server/generation_responder.h"

#include <algorithm>

namespace lmrun::server {
namespace {

Usage usage_of(const std::vector<RequestOutput>& outputs) {
    Usage usage;
    for (const RequestOutput& output : outputs) {
        usage.prompt_tokens += output.metrics.num_prompt_tokens;
        usage.cached_tokens += output.metrics.num_cached_tokens;
        for (const CompletionOutput& completion : output.outputs) {
            usage.completion_tokens += int64_t(completion.token_ids.size());
        }
    }
    return usage;
}

// Shared by every chunk of one streamed response.
struct StreamState {
    GenerationPlan plan;
    std::shared_ptr<RequestStream> stream;
    std::vector<int64_t> text_offsets;      // per choice: completion bytes so far (completions logprobs)
    std::vector<bool> started;              // per choice: echo / role already sent
    std::vector<ChatOutputParser> parsers;  // per choice, when plan.chat_output is set
    Usage usage;
    bool header_sent = false;
    bool done = false;
};

std::string format_completion_delta(StreamState& state, const CompletionDelta& delta,
                                    const TokenTextFn& token_text) {
    const size_t index = size_t(delta.index);
    std::string text = delta.text;
    if (!state.started[index]) {
        state.started[index] = true;
        const size_t prompt = index / size_t(state.plan.n);
        if (prompt < state.plan.echo_prefixes.size()) text = state.plan.echo_prefixes[prompt] + text;
    }
    Json logprobs = nullptr;
    if (state.plan.logprobs && !delta.logprobs.empty()) {
        logprobs = completion_logprobs(delta.logprobs, token_text, state.text_offsets[index]);
        for (const TokenLogprob& entry : delta.logprobs)
            state.text_offsets[index] += int64_t(token_text(entry.token_id).size());
    }
    if (text.empty() && !delta.finished && logprobs.is_null() && !state.plan.return_token_ids) return {};
    Json chunk = completion_chunk(state.plan.header, delta.index, text, std::move(logprobs),
                                  delta.finish_reason, state.plan.include_usage);
    if (state.plan.return_token_ids) chunk["choices"][0]["token_ids"] = delta.token_ids;
    return sse_event(chunk);
}

// Through the choice's output parser: reasoning, content and tool-call deltas.
std::string format_parsed_chat_delta(StreamState& state, const CompletionDelta& delta, Json logprobs) {
    ChatOutputParser& parser = state.parsers[size_t(delta.index)];
    ChatDelta parsed = parser.push(delta.text);
    if (delta.finished) {
        ChatDelta rest = parser.finish();
        parsed.reasoning += rest.reasoning;
        parsed.content += rest.content;
        parsed.tool_calls.insert(parsed.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
    }
    if (parsed.empty() && !delta.finished && logprobs.is_null() && !state.plan.return_token_ids) return {};
    Json chunk = chat_chunk(state.plan.header, delta.index, parser.delta_json(parsed), std::move(logprobs),
                            delta.finish_reason, state.plan.include_usage);
    if (delta.finished) chunk["choices"][0]["finish_reason"] = parser.finish_reason(delta.finish_reason);
    if (state.plan.return_token_ids) chunk["choices"][0]["token_ids"] = delta.token_ids;
    return sse_event(chunk);
}

std::string format_chat_delta(StreamState& state, const CompletionDelta& delta,
                              const TokenTextFn& token_text) {
    Json logprobs = nullptr;
    if (state.plan.logprobs && !delta.logprobs.empty()) logprobs = chat_logprobs(delta.logprobs, token_text);
    if (!state.parsers.empty()) return format_parsed_chat_delta(state, delta, std::move(logprobs));
    if (delta.text.empty() && !delta.finished && logprobs.is_null() && !state.plan.return_token_ids)
        return {};
    Json content = Json::object();
    if (!delta.text.empty() || !delta.finished) content["content"] = delta.text;
    Json chunk = chat_chunk(state.plan.header, delta.index, std::move(content), std::move(logprobs),
                            delta.finish_reason, state.plan.include_usage);
    if (state.plan.return_token_ids) chunk["choices"][0]["token_ids"] = delta.token_ids;
    return sse_event(chunk);
}

std::string format_event(StreamState& state, StreamEvent& event, const TokenTextFn& token_text) {
    if (event.kind == StreamEvent::Kind::Finished) {
        std::vector<RequestOutput> one;
        one.push_back(std::move(event.output));
        Usage usage = usage_of(one);
        state.usage.prompt_tokens += usage.prompt_tokens;
        state.usage.completion_tokens += usage.completion_tokens;
        state.usage.cached_tokens += usage.cached_tokens;
        return {};
    }
    const CompletionDelta& delta = event.delta;
    std::string out;
    if (!delta.error_message.empty()) {
        out += sse_event(internal_error(delta.error_message).to_json());
    }
    out += state.plan.kind == ApiKind::Completion ? format_completion_delta(state, delta, token_text)
                                                  : format_chat_delta(state, delta, token_text);
    return out;
}

// Chat streams open every choice with {"role": "assistant"}, as OpenAI's do.
std::string format_stream_header(StreamState& state) {
    std::string out;
    if (state.plan.kind != ApiKind::Chat) return out;
    const int32_t num_choices = int32_t(state.plan.requests.size()) * state.plan.n;
    for (int32_t index = 0; index < num_choices; ++index) {
        out += sse_event(chat_chunk(state.plan.header, index, Json{{"role", "assistant"}, {"content", ""}},
                                    nullptr, FinishReason::None, state.plan.include_usage));
    }
    return out;
}

// The Server-Sent Events of one streamed response, pulled by the transport as the client takes them.
class SseBody final : public BodyStream {
  public:
    SseBody(EndpointContext& context, std::shared_ptr<StreamState> state)
        : context_(context), state_(std::move(state)) {}

    Poll poll(std::string& out, const std::function<void()>& wake) override {
        StreamState& state = *state_;
        if (state.done) return Poll::End;
        TokenTextFn token_text = [&](int32_t id) { return context_.prompts.token_text(id); };
        if (!state.header_sent) {
            state.header_sent = true;
            out += format_stream_header(state);
        }
        // Drain what is there; leave a wake-up only when nothing was found.
        while (out.size() < (1 << 16)) {
            std::optional<StreamEvent> event =
                state.stream->try_pop(out.empty() ? wake : std::function<void()>());
            if (!event) break;
            out += format_event(state, *event, token_text);
        }
        if (state.stream->all_finished()) {
            if (state.plan.include_usage) {
                const char* object =
                    state.plan.kind == ApiKind::Chat ? "chat.completion.chunk" : "text_completion";
                out += sse_event(usage_chunk(state.plan.header, object, state.usage));
            }
            out += sse_done();
            state.done = true;
            return Poll::End;
        }
        return out.empty() ? Poll::Pending : Poll::Data;
    }

    void finished(bool complete) override {
        // The client went away (or a write failed) before the end: free its KV blocks now.
        if (!complete || !state_->done) context_.engine.abort(state_->stream);
    }

  private:
    EndpointContext& context_;
    std::shared_ptr<StreamState> state_;
};

void respond_streaming(EndpointContext& context, std::shared_ptr<StreamState> state,
                       const ExchangePtr& exchange) {
    // A client that hangs up while nothing is being written (a long prefill) is noticed too.
    AsyncEngine* engine = &context.engine;
    std::weak_ptr<RequestStream> stream = state->stream;
    exchange->on_client_gone([engine, stream] {
        if (auto alive = stream.lock()) engine->abort(alive);
    });
    HttpResponse response;
    response.content_type = "text/event-stream";
    response.set_header("Cache-Control", "no-cache");
    response.set_header("X-Accel-Buffering", "no");
    response.stream = std::make_shared<SseBody>(context, std::move(state));
    exchange->respond(std::move(response));
}

Json choices_of(EndpointContext& context, const GenerationPlan& plan,
                const std::vector<RequestOutput>& outputs) {
    TokenTextFn token_text = [&](int32_t id) { return context.prompts.token_text(id); };
    Json choices = Json::array();
    for (size_t p = 0; p < outputs.size(); ++p) {
        std::vector<CompletionOutput> completions = outputs[p].outputs;
        std::sort(completions.begin(), completions.end(),
                  [](const auto& a, const auto& b) { return a.index < b.index; });
        for (const CompletionOutput& completion : completions) {
            Json logprobs = nullptr;
            Json stop_reason = stop_reason_json(completion.stop_reason);
            if (plan.kind == ApiKind::Chat) {
                if (plan.logprobs) logprobs = chat_logprobs(completion.logprobs, token_text);
                choices.push_back(chat_choice(completion.index, completion.text, std::move(logprobs),
                                              completion.finish_reason, std::move(stop_reason)));
                if (plan.chat_output) {
                    ChatOutputParser parser(*plan.chat_output);
                    parser.push(completion.text);
                    parser.finish();
                    choices.back()["message"] = parser.message_json();
                    choices.back()["finish_reason"] = parser.finish_reason(completion.finish_reason);
                }
            } else {
                if (plan.logprobs) logprobs = completion_logprobs(completion.logprobs, token_text, 0);
                std::string text =
                    p < plan.echo_prefixes.size() ? plan.echo_prefixes[p] + completion.text : completion.text;
                choices.push_back(completion_choice(completion.index, text, std::move(logprobs),
                                                    completion.finish_reason, std::move(stop_reason)));
            }
            if (plan.return_token_ids) {
                choices.back()["token_ids"] = completion.token_ids;
                choices.back()["prompt_token_ids"] = outputs[p].prompt_token_ids;
            }
        }
    }
    return choices;
}

// The JSON answer, or the error that ended the request.
HttpResponse whole_response(EndpointContext& context, const GenerationPlan& plan,
                            const std::vector<RequestOutput>& outputs) {
    for (const RequestOutput& output : outputs) {
        for (const CompletionOutput& completion : output.outputs) {
            if (completion.finish_reason == FinishReason::Error) {
                // Refused before it produced anything (e.g. the prompt cannot fit the KV cache): the input's
                // fault.
                if (completion.token_ids.empty())
                    return error_response(invalid_request(completion.error_message, "prompt"));
                return error_response(internal_error(completion.error_message));
            }
            if (completion.finish_reason == FinishReason::Abort)
                return error_response(unavailable("the request was aborted: the server is shutting down"));
        }
    }
    Json choices = choices_of(context, plan, outputs);
    Json body = plan.kind == ApiKind::Chat
                    ? chat_response(plan.header, std::move(choices), usage_of(outputs))
                    : completion_response(plan.header, std::move(choices), usage_of(outputs));
    return json_response(body);
}

// A non-streamed request while the engine works on it: collects the final outputs as they arrive
// and answers once all are in. Runs on a worker; the engine thread's wake-up posts the next run.
struct WholeRequest : std::enable_shared_from_this<WholeRequest> {
    EndpointContext& context;
    GenerationPlan plan;
    std::shared_ptr<RequestStream> stream;
    ExchangePtr exchange;
    std::vector<RequestOutput> outputs;

    WholeRequest(EndpointContext& context_, GenerationPlan plan_, std::shared_ptr<RequestStream> stream_,
                 ExchangePtr exchange_)
        : context(context_),
          plan(std::move(plan_)),
          stream(std::move(stream_)),
          exchange(std::move(exchange_)) {
        outputs.resize(plan.requests.size());
    }

    void collect() {
        // The wake-up keeps this alive while the engine works: the stream drops it once it is called.
        auto wake = [self = shared_from_this()] { self->context.workers.post([self] { self->collect(); }); };
        for (;;) {
            std::optional<StreamEvent> event = stream->try_pop();
            if (!event) {
                if (stream->all_finished()) return exchange->respond(whole_response(context, plan, outputs));
                event = stream->try_pop(wake);  // leaves the wake-up only if still nothing arrived
                if (!event) return;
            }
            if (event->kind == StreamEvent::Kind::Finished)
                outputs[size_t(event->prompt_index)] = std::move(event->output);
        }
    }
};

}  // namespace

void respond_generation(EndpointContext& context, GenerationPlan plan, const ExchangePtr& exchange) {
    std::vector<std::string> ids;
    for (size_t p = 0; p < plan.requests.size(); ++p) ids.push_back(plan.header.id + "-" + std::to_string(p));
    auto stream = std::make_shared<RequestStream>(std::move(ids), plan.n, plan.stream);
    switch (context.engine.submit(stream, plan.requests)) {
        case AdmitResult::Accepted:
            break;
        case AdmitResult::QueueFull:
            return exchange->respond(error_response(too_many_requests(context.engine.admission_limit())));
        case AdmitResult::TooLarge:
            return exchange->respond(error_response(invalid_request(
                "the request asks for more completions (prompts x n) than the server admits at "
                "once (" +
                    std::to_string(context.engine.admission_limit()) + ")",
                "n")));
        case AdmitResult::ShuttingDown:
            return exchange->respond(error_response(unavailable("the server is shutting down")));
    }
    if (!plan.stream) {
        AsyncEngine* engine = &context.engine;
        std::weak_ptr<RequestStream> weak_stream = stream;
        exchange->on_client_gone([engine, weak_stream] {
            if (auto alive = weak_stream.lock()) engine->abort(alive);
        });
        auto whole = std::make_shared<WholeRequest>(context, std::move(plan), std::move(stream), exchange);
        whole->collect();
        return;
    }
    auto state = std::make_shared<StreamState>();
    const size_t num_choices = plan.requests.size() * size_t(plan.n);
    state->text_offsets.assign(num_choices, 0);
    state->started.assign(num_choices, false);
    if (plan.chat_output) state->parsers.assign(num_choices, ChatOutputParser(*plan.chat_output));
    state->plan = std::move(plan);
    state->stream = std::move(stream);
    respond_streaming(context, std::move(state), exchange);
}

}  // namespace lmrun::server
