#include "server/generation_responder.h"

#include <algorithm>

namespace lmrun::server {
namespace {

constexpr double kPollSeconds = 0.05;

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
    std::vector<int64_t> text_offsets;  // per choice: completion bytes so far (completions logprobs)
    std::vector<bool> started;          // per choice: echo / role already sent
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

std::string format_chat_delta(StreamState& state, const CompletionDelta& delta,
                              const TokenTextFn& token_text) {
    Json logprobs = nullptr;
    if (state.plan.logprobs && !delta.logprobs.empty()) logprobs = chat_logprobs(delta.logprobs, token_text);
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

// One call of httplib's chunked content provider: whatever the engine produced since the last call.
bool provide_chunks(EndpointContext& context, StreamState& state, httplib::DataSink& sink) {
    if (state.done) {
        sink.done();
        return true;
    }
    TokenTextFn token_text = [&](int32_t id) { return context.prompts.token_text(id); };
    std::string out;
    if (!state.header_sent) {
        state.header_sent = true;
        out += format_stream_header(state);
    }
    for (std::optional<StreamEvent> event = state.stream->pop(kPollSeconds); event;
         event = state.stream->pop(0)) {
        // NOLINTNEXTLINE(bugprone-unchecked-optional-access): the loop condition checks it
        out += format_event(state, *event, token_text);
        if (out.size() > (1 << 16)) break;
    }
    const bool finished = state.stream->all_finished();
    if (finished) {
        if (state.plan.include_usage) {
            const char* object =
                state.plan.kind == ApiKind::Chat ? "chat.completion.chunk" : "text_completion";
            out += sse_event(usage_chunk(state.plan.header, object, state.usage));
        }
        out += sse_done();
    }
    if (!out.empty() && !sink.write(out.data(), out.size())) return false;
    if (finished) {
        state.done = true;
        sink.done();
    }
    return true;
}

void respond_streaming(EndpointContext& context, const std::shared_ptr<StreamState>& state,
                       httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    AsyncEngine* engine = &context.engine;
    res.set_chunked_content_provider(
        "text/event-stream",
        [&context, state](size_t, httplib::DataSink& sink) { return provide_chunks(context, *state, sink); },
        [engine, state](bool success) {
            // The client went away (or the write failed): free its KV blocks now.
            if (!success || !state->done) engine->abort(state->stream);
        });
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

void respond_whole(EndpointContext& context, const GenerationPlan& plan, RequestStream& stream,
                   httplib::Response& res) {
    std::vector<RequestOutput> outputs;
    stream.wait_all(outputs, kPollSeconds, [] { return true; });
    for (const RequestOutput& output : outputs) {
        for (const CompletionOutput& completion : output.outputs) {
            if (completion.finish_reason == FinishReason::Error) {
                // Refused before it produced anything (e.g. the prompt cannot fit the KV cache): the input's
                // fault.
                if (completion.token_ids.empty())
                    return send_error(res, invalid_request(completion.error_message, "prompt"));
                return send_error(res, internal_error(completion.error_message));
            }
            if (completion.finish_reason == FinishReason::Abort) {
                return send_error(res, unavailable("the request was aborted: the server is shutting down"));
            }
        }
    }
    Json choices = choices_of(context, plan, outputs);
    Json body = plan.kind == ApiKind::Chat
                    ? chat_response(plan.header, std::move(choices), usage_of(outputs))
                    : completion_response(plan.header, std::move(choices), usage_of(outputs));
    send_json(res, body);
}

}  // namespace

void respond_generation(EndpointContext& context, GenerationPlan plan, httplib::Response& res) {
    std::vector<std::string> ids;
    for (size_t p = 0; p < plan.requests.size(); ++p) ids.push_back(plan.header.id + "-" + std::to_string(p));
    auto stream = std::make_shared<RequestStream>(std::move(ids), plan.n, plan.stream);
    switch (context.engine.submit(stream, plan.requests)) {
        case AdmitResult::Accepted:
            break;
        case AdmitResult::QueueFull:
            res.set_header("Retry-After", "1");
            return send_error(res, too_many_requests(context.engine.admission_limit()));
        case AdmitResult::TooLarge:
            return send_error(res,
                              invalid_request("the request asks for more completions (prompts x n) than the "
                                              "server admits at once (" +
                                                  std::to_string(context.engine.admission_limit()) + ")",
                                              "n"));
        case AdmitResult::ShuttingDown:
            return send_error(res, unavailable("the server is shutting down"));
    }
    if (!plan.stream) return respond_whole(context, plan, *stream, res);
    auto state = std::make_shared<StreamState>();
    const size_t num_choices = plan.requests.size() * size_t(plan.n);
    state->text_offsets.assign(num_choices, 0);
    state->started.assign(num_choices, false);
    state->plan = std::move(plan);
    state->stream = std::move(stream);
    respond_streaming(context, state, res);
}

}  // namespace lmrun::server
