#include "tokenizer/streaming_detokenizer.h"

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lmrun {

namespace {

// Ids kept waiting for a byte run to end / a character to complete before
// emitting anyway; only degenerate streams (long runs of invalid bytes) reach
// them, and they bound the per-push cost.
constexpr size_t kMaxPendingRunIds = 16;
constexpr size_t kMaxPendingIds = 64;
// Prompt ids kept as decoding context by set_prefix(), and how many more it may
// take to avoid starting the window inside a character split over several tokens.
constexpr size_t kPrefixContextIds = 8;
constexpr size_t kMaxExtraContextIds = 8;

bool ends_with_replacement(const std::string& text) {
    return text.ends_with(unicode::kReplacementChar);
}

// Length of the common prefix of a and b, cut back to a UTF-8 character boundary.
size_t common_prefix_length(const std::string& a, const std::string& b) {
    size_t length = 0;
    while (length < a.size() && length < b.size() && a[length] == b[length]) ++length;
    while (length > 0 && length < b.size() && (static_cast<unsigned char>(b[length]) & 0xC0) == 0x80)
        --length;
    return length;
}

}  // namespace

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

void StreamingDetokenizer::set_prefix(std::span<const int32_t> prompt_ids) {
    size_t keep = std::min(prompt_ids.size(), kPrefixContextIds);
    // A window that starts mid-character decodes that character as U+FFFD, and a
    // byte-fallback run cut that way turns wholly into U+FFFD: step back first.
    for (size_t extra = 0; extra < kMaxExtraContextIds && keep < prompt_ids.size(); ++extra) {
        const std::string head = tokenizer_->decode_chunk(prompt_ids.last(keep), skip_special_tokens_, false);
        if (!head.starts_with(unicode::kReplacementChar)) break;
        ++keep;
    }
    const auto dropped = prompt_ids.first(prompt_ids.size() - keep);
    window_at_start_ = true;
    for (int32_t id : dropped) {
        if (tokenizer_->decodes_to_token(id, skip_special_tokens_)) window_at_start_ = false;
    }
    const auto kept = prompt_ids.last(keep);
    ids_.assign(kept.begin(), kept.end());
    ends_in_byte_run_ = false;
    for (int32_t id : kept) {
        if (tokenizer_->decodes_to_token(id, skip_special_tokens_))
            ends_in_byte_run_ = tokenizer_->is_fallback_byte(id);
    }
    prefix_offset_ = 0;
    read_offset_ = ids_.size();
    prefix_text_ = decode_window(prefix_offset_, read_offset_);
}

std::string StreamingDetokenizer::decode_window(size_t begin, size_t end) const {
    return tokenizer_->decode_chunk(std::span<const int32_t>(ids_).subspan(begin, end - begin),
                                    skip_special_tokens_, window_at_start_);
}

std::string StreamingDetokenizer::push(int32_t id) {
    ids_.push_back(id);
    if (tokenizer_->decodes_to_token(id, skip_special_tokens_))
        ends_in_byte_run_ = tokenizer_->is_fallback_byte(id);
    const size_t num_pending = ids_.size() - read_offset_;
    if (ends_in_byte_run_ && num_pending <= kMaxPendingRunIds) return {};
    const std::string window_text = decode_window(prefix_offset_, ids_.size());
    const bool pending_too_long = num_pending > kMaxPendingIds;
    if (window_text.size() <= prefix_text_.size() && !pending_too_long) return {};
    if (ends_with_replacement(window_text) && !pending_too_long) return {};
    return emit(window_text);
}

std::string StreamingDetokenizer::emit(const std::string& window_text) {
    // The window text normally extends what was emitted; if an invalid byte
    // sequence changed earlier text, emit only past the common part.
    const size_t emitted = window_text.starts_with(prefix_text_)
                               ? prefix_text_.size()
                               : common_prefix_length(prefix_text_, window_text);
    std::string new_text = window_text.size() > emitted ? window_text.substr(emitted) : std::string();
    // Slide the window: the ids emitted before this push become its context.
    for (size_t i = prefix_offset_; i < read_offset_; ++i) {
        if (tokenizer_->decodes_to_token(ids_[i], skip_special_tokens_)) window_at_start_ = false;
    }
    prefix_offset_ = read_offset_;
    read_offset_ = ids_.size();
    prefix_text_ = decode_window(prefix_offset_, read_offset_);
    compact();
    return new_text;
}

std::string StreamingDetokenizer::flush() {
    if (read_offset_ == ids_.size()) return {};
    return emit(decode_window(prefix_offset_, ids_.size()));
}

void StreamingDetokenizer::compact() {
    if (prefix_offset_ < 256) return;
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_offset_));
    read_offset_ -= prefix_offset_;
    prefix_offset_ = 0;
}

}  // namespace lmrun
