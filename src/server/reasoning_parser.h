// --reasoning-parser qwen3: splits a Qwen3 answer into its thinking, the text
// between <think> and </think> (message.reasoning_content), and what follows
// (message.content), as text streams in. A leading <think> is optional (newer
// templates put it in the prompt); text is held back only while it could still
// be the start of the closing tag. Without </think> all of it is reasoning
// (the model was cut off while thinking). When the prompt already closed the
// thinking (chat_template_kwargs {"enable_thinking": false}), there is none.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace lmrun::server {

struct ReasoningSplit {
    std::string reasoning;
    std::string answer;
};

class ReasoningParser {
  public:
    explicit ReasoningParser(bool thinking = true) : state_(thinking ? State::Start : State::Answer) {}

    ReasoningSplit push(std::string_view text);
    ReasoningSplit finish();
    bool in_reasoning() const { return state_ != State::Answer; }

  private:
    enum class State { Start, Reasoning, Answer };
    ReasoningSplit drain(bool final);

    State state_;
    std::string pending_;
    bool answer_started_ = false;  // leading whitespace of the answer is dropped
};

// Whether a Qwen3 prompt leaves the model to think first: the turn being
// generated (after the last <|im_start|>) has no </think> yet.
bool qwen3_prompt_opens_reasoning(const Tokenizer& tokenizer, std::span<const int32_t> prompt_ids);
// The token that ends Qwen3's reasoning (the constraint of a structured output starts after it).
std::optional<int32_t> qwen3_reasoning_end_token(const Tokenizer& tokenizer);

}  // namespace lmrun::server
