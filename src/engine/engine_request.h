// A request inside the LLMEngine (vLLM's Request): its prompt, sampling parameters,
// streaming callback and metrics, and its n completions. A Completion is one thing the
// scheduler moves (its Sequence) together with the OutputProcessor that turns the
// sequence's tokens into text and the output built so far.
//
// The first completion runs the prompt alone; the others start once its first token is
// sampled, so that they find the prompt's KV blocks in the prefix cache. Until then their
// sequences are null; if the first completion ends before that (its prompt failed, or the
// request was aborted), the others end the same way without ever starting.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/output_processor.h"
#include "engine/request_output.h"
#include "engine/sampling_params.h"
#include "engine/sequence.h"

namespace lmrun {

namespace structured {
class CompiledGrammar;
}

using DeltaCallback = std::function<void(const CompletionDelta&)>;

struct Request;

struct Completion {
    Request* request = nullptr;                  // the request it belongs to
    std::shared_ptr<Sequence> seq;               // null until it starts
    std::unique_ptr<OutputProcessor> processor;  // created when it starts
    CompletionOutput output;                     // output.index: its place in the request
    uint64_t seed = 0;                           // of its sampler stream

    bool is_started() const { return seq != nullptr; }
    bool is_finished() const { return output.finish_reason != FinishReason::None; }
};

struct Request {
    std::string id;
    std::vector<int32_t> prompt_ids;
    SamplingParams params;
    DeltaCallback on_delta;
    // params.n entries, made at once and never resized: the engine keeps pointers to them.
    std::vector<Completion> completions;
    RequestMetrics metrics;
    std::shared_ptr<const structured::CompiledGrammar> grammar;  // structured output, or null

    bool is_finished() const {
        return std::all_of(completions.begin(), completions.end(),
                           [](const Completion& completion) { return completion.is_finished(); });
    }
};

}  // namespace lmrun
