#include "engine/output_processor.h"

#include <algorithm>

namespace lmrun {

OutputProcessor::OutputProcessor(const Tokenizer* tokenizer, const SamplingParams& params,
                                 std::span<const int32_t> prompt_ids)
    : tokenizer_(tokenizer), stop_(params.stop) {
    if (tokenizer_) {
        detokenizer_ = std::make_unique<StreamingDetokenizer>(*tokenizer_, params.skip_special_tokens);
        detokenizer_->set_prefix(prompt_ids);
    }
    for (const std::string& stop : stop_) max_stop_bytes_ = std::max(max_stop_bytes_, stop.size());
}

bool OutputProcessor::add_token(int32_t token_id) {
    if (!detokenizer_ || finished_) return false;
    const size_t old_size = text_.size();
    text_ += detokenizer_->push(token_id);
    if (stop_.empty() || text_.size() == old_size) return false;
    // A stop string can only newly appear if it overlaps the added text.
    size_t search_from = old_size >= max_stop_bytes_ ? old_size - max_stop_bytes_ + 1 : 0;
    size_t best = std::string::npos;
    for (const std::string& stop : stop_) {
        size_t found = text_.find(stop, search_from);
        if (found != std::string::npos && found < best) {
            best = found;
            matched_stop_ = stop;
        }
    }
    if (best == std::string::npos) return false;
    text_.resize(best);
    finished_ = true;
    return true;
}

void OutputProcessor::finish() {
    if (detokenizer_ && !finished_) text_ += detokenizer_->flush();
    finished_ = true;
}

// Text that is certain: everything but the last (longest stop - 1) bytes, moved back to a
// UTF-8 character boundary, unless the completion has finished.
size_t OutputProcessor::safe_emit_end() const {
    if (finished_ || max_stop_bytes_ <= 1) return text_.size();
    size_t end = text_.size() > max_stop_bytes_ - 1 ? text_.size() - (max_stop_bytes_ - 1) : 0;
    while (end > 0 && end < text_.size() && (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) --end;
    return std::max(end, emitted_bytes_);
}

std::string OutputProcessor::take_new_text() {
    size_t end = safe_emit_end();
    std::string delta = text_.substr(emitted_bytes_, end - emitted_bytes_);
    emitted_bytes_ = end;
    return delta;
}

}  // namespace lmrun
