#include "server/reasoning_parser.h"

#include <algorithm>

#include "server/tag_scan.h"

namespace lmrun::server {
namespace {

constexpr std::string_view kThinkStart = "<think>";
constexpr std::string_view kThinkEnd = "</think>";

}  // namespace

ReasoningSplit ReasoningParser::push(std::string_view text) {
    pending_ += text;
    return drain(false);
}

ReasoningSplit ReasoningParser::finish() {
    return drain(true);
}

ReasoningSplit ReasoningParser::drain(bool final) {
    ReasoningSplit out;
    if (state_ == State::Start) {
        const size_t first = pending_.find_first_not_of(" \n\r\t");
        const std::string_view rest =
            first == std::string::npos ? std::string_view() : std::string_view(pending_).substr(first);
        if (!final && rest.size() < kThinkStart.size() && kThinkStart.substr(0, rest.size()) == rest)
            return out;
        if (rest.substr(0, kThinkStart.size()) == kThinkStart) pending_.erase(0, first + kThinkStart.size());
        state_ = State::Reasoning;
    }
    if (state_ == State::Reasoning) {
        const size_t end = pending_.find(kThinkEnd);
        if (end == std::string::npos) {
            const size_t keep = final ? 0 : partial_tag_suffix(pending_, kThinkEnd);
            out.reasoning = pending_.substr(0, pending_.size() - keep);
            pending_.erase(0, pending_.size() - keep);
            return out;
        }
        out.reasoning = pending_.substr(0, end);
        pending_.erase(0, end + kThinkEnd.size());
        state_ = State::Answer;
    }
    if (!answer_started_) {
        const size_t first =
            std::find_if(pending_.begin(), pending_.end(), [](char c) { return !is_tag_space(c); }) -
            pending_.begin();
        pending_.erase(0, first);
        if (pending_.empty()) return out;
        answer_started_ = true;
    }
    out.answer = std::move(pending_);
    pending_.clear();
    return out;
}

bool qwen3_prompt_opens_reasoning(const Tokenizer& tokenizer, std::span<const int32_t> prompt_ids) {
    const auto start = tokenizer.token_to_id("<|im_start|>");
    const auto end = tokenizer.token_to_id(std::string(kThinkEnd));
    if (!start || !end) return false;
    for (size_t i = prompt_ids.size(); i-- > 0;) {
        if (prompt_ids[i] == *end) return false;
        if (prompt_ids[i] == *start) return true;
    }
    return true;
}

std::optional<int32_t> qwen3_reasoning_end_token(const Tokenizer& tokenizer) {
    return tokenizer.token_to_id(std::string(kThinkEnd));
}

}  // namespace lmrun::server
