// Hugging Face tokenizer.json tokenizers, behaving as HF's Rust `tokenizers` does.
// Encoding: added tokens are cut out of the raw text first; each piece in between
// goes through normalizer -> pre_tokenizer -> BPE model; then the post-processor
// (or tokenizer_config's add_bos_token) adds BOS/EOS. Decoding maps ids to token
// strings (added tokens first, then the model vocab; unknown ids are dropped) and
// runs the decoder chain. Ids are int32 indices into the vocabulary.
// Encoding and decoding are const and safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/streaming_detokenizer.h"  // so that this header gives the whole public API

namespace lmrun {

class Tokenizer {
  public:
    // Loads tokenizer.json, plus tokenizer_config.json from the same folder when present.
    static Result<std::unique_ptr<Tokenizer>> from_file(const std::string& tokenizer_json_path);
    static Result<std::unique_ptr<Tokenizer>> from_dir(const std::string& dir);  // dir/tokenizer.json
    // From the text of a tokenizer.json (through the same bounded reader as from_file);
    // `source` names it in error messages.
    static Result<std::unique_ptr<Tokenizer>> from_text(std::string_view tokenizer_json,
                                                        nlohmann::json tokenizer_config,
                                                        const std::string& source);
    // From parsed JSON (keep it within kTokenizerJsonLimits: the walk over it recurses);
    // `source` names the origin in error messages.
    static Result<std::unique_ptr<Tokenizer>> from_json(const nlohmann::json& tokenizer_json,
                                                        nlohmann::json tokenizer_config,
                                                        const std::string& source);

    // Text that is not valid UTF-8 is first repaired (ill-formed bytes -> U+FFFD).
    std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
    std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

    int32_t vocab_size() const;  // highest id + 1 incl. added tokens
    std::optional<int32_t> token_to_id(std::string_view token) const;
    std::string id_to_token(int32_t id) const;  // the raw vocab string; empty for an unknown id
    bool is_special(int32_t id) const;
    std::optional<int32_t> bos_token_id() const { return bos_token_id_; }
    std::optional<int32_t> eos_token_id() const { return eos_token_id_; }
    std::optional<int32_t> pad_token_id() const { return pad_token_id_; }
    // tokenizer_config's bos_token / eos_token as text ("" when absent), e.g. for chat templates.
    const std::string& bos_token() const { return bos_token_; }
    const std::string& eos_token() const { return eos_token_; }
    const nlohmann::json& tokenizer_config() const { return config_; }

    // For streaming: decodes `ids` as a chunk of a longer sequence. When
    // `at_sequence_start` is false, start-of-text decoder steps are skipped.
    std::string decode_chunk(std::span<const int32_t> ids, bool skip_special_tokens,
                             bool at_sequence_start) const;
    // Whether `id` yields a token string in decode() (known, and not a skipped special).
    bool decodes_to_token(int32_t id, bool skip_special_tokens) const;
    // Whether `id` is a byte-fallback token whose text depends on the ids after it.
    bool is_fallback_byte(int32_t id) const;

  private:
    Tokenizer() = default;
    static Result<std::unique_ptr<Tokenizer>> build(const nlohmann::json& spec,
                                                    std::optional<BpeTables> tables, nlohmann::json config,
                                                    const std::string& source);
    Status configure_special_tokens();
    void encode_text(std::string_view text, bool at_input_start, std::vector<int32_t>& ids) const;
    void encode_normalized(std::string_view normalized, bool at_input_start, std::vector<int32_t>& ids) const;
    const std::string* token_string(int32_t id) const;

    AddedVocabulary added_;
    Normalizer normalizer_;
    PreTokenizer pre_tokenizer_;
    BpeModel model_;
    PostProcessor post_processor_;
    Decoder decoder_;
    nlohmann::json config_ = nlohmann::json::object();
    std::optional<int32_t> bos_token_id_;
    std::optional<int32_t> eos_token_id_;
    std::optional<int32_t> pad_token_id_;
    std::string bos_token_;
    std::string eos_token_;
};

}  // namespace lmrun
