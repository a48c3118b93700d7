// Incremental detokenization for streaming generation. Ids arrive one at a time;
// push() returns only text that is final: never a partial UTF-8 character, never
// text already returned. The concatenation of all push() results and flush()
// equals tokenizer.decode(all ids) (after set_prefix: the text that follows the
// prompt's decode), including SentencePiece's leading-space strip and byte-fallback
// tokens.
//
// Method (as vLLM / HF DecodeStream): keep a window of ids [prefix_offset, end) with
// read_offset marking what was already emitted. Each push decodes the window and
// the already-emitted part of it, and emits the difference once the window's text
// no longer ends in U+FFFD (an incomplete character) and, with a ByteFallback
// decoder, no longer ends in a run of <0xNN> byte tokens (HF turns a whole run into
// U+FFFDs when it is not valid UTF-8, so a run is final only when it ends). The
// window then slides, so a push costs O(window), O(1) amortized. Start-of-text
// decoder steps (Strip, Metaspace) apply to the window only while nothing of the
// sequence precedes it.
//
// Limits: to bound the window, a byte run is held back for at most 16 ids and an
// incomplete character for at most 64; past that, text is emitted even though a
// later id could still change it (which only an ill-formed byte stream does).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lmrun {

class Tokenizer;

class StreamingDetokenizer {
  public:
    StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = false);

    // Primes with prompt ids so the first generated token decodes in context;
    // resets any previous state. Nothing of the prompt is emitted.
    void set_prefix(std::span<const int32_t> prompt_ids);
    std::string push(int32_t id);  // new complete text, possibly empty
    std::string flush();           // whatever is left (may contain U+FFFD for a truncated char)

  private:
    std::string decode_window(size_t begin, size_t end) const;
    std::string emit(const std::string& window_text);
    void compact();

    const Tokenizer* tokenizer_;  // a pointer keeps the class copyable and assignable
    bool skip_special_tokens_;
    std::vector<int32_t> ids_;
    size_t prefix_offset_ = 0;       // window start in ids_
    size_t read_offset_ = 0;         // ids_[prefix_offset_, read_offset_) were already emitted
    std::string prefix_text_;        // decode of ids_[prefix_offset_, read_offset_)
    bool window_at_start_ = true;    // no decodable id precedes the window
    bool ends_in_byte_run_ = false;  // the last decodable id is a byte-fallback token
};

}  // namespace lmrun
