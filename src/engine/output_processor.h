// Turns one completion's sampled tokens into text as they arrive: incremental
// detokenization, stop strings matched across token boundaries (and cut from the
// output), and hold-back of text that could still become a stop string, so a
// stream never shows text that the final output does not have.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace lmrun {

class OutputProcessor {
  public:
    // tokenizer may be null (token-id-only models): text stays empty.
    OutputProcessor(const Tokenizer* tokenizer, const SamplingParams& params,
                    std::span<const int32_t> prompt_ids);

    // Adds a sampled token. Returns true if a stop string matched: the text is cut before it.
    bool add_token(int32_t token_id);
    // Ends the completion: releases held-back text.
    void finish();
    // Text not yet handed out (call after add_token/finish); advances the emitted mark.
    std::string take_new_text();

    const std::string& text() const { return text_; }
    const std::string& matched_stop() const { return matched_stop_; }

  private:
    size_t safe_emit_end() const;

    const Tokenizer* tokenizer_;
    std::unique_ptr<StreamingDetokenizer> detokenizer_;
    std::vector<std::string> stop_;
    size_t max_stop_bytes_ = 0;
    std::string text_;
    size_t emitted_bytes_ = 0;
    bool finished_ = false;
    std::string matched_stop_;
};

}  // namespace lmrun
