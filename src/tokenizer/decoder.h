// tokenizer.json "decoder": turns the token strings of an id sequence back into
// text with HF's decode_chain semantics (each step maps a list of strings to a
// list of strings; the result is their concatenation). Supported types: Sequence,
// ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace. With no decoder the
// tokens are joined with spaces, as HF does.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "tokenizer/pattern.h"

namespace lmrun {

class Decoder {
  public:
    // `spec` may be null.
    static Result<Decoder> from_json(const nlohmann::json& spec);

    // `at_sequence_start` is false when `tokens` continue an earlier chunk of the
    // same sequence (streaming): steps that only act on the first token or the
    // start of the text (Strip start, Metaspace prefix) are then skipped.
    std::string decode(std::vector<std::string> tokens, bool at_sequence_start = true) const;
    // Whether `token` is a "<0xNN>" byte that a ByteFallback step joins with its
    // neighbours: such a run decodes to text only as a whole (all U+FFFD if invalid).
    bool is_fallback_byte(const std::string& token) const;

  private:
    enum class Kind { ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace };
    struct Step {
        Kind kind = Kind::Fuse;
        Pattern pattern = Pattern::literal("");
        std::string content;  // Replace content, Strip char or Metaspace replacement
        size_t strip_start = 0;
        size_t strip_stop = 0;
        bool metaspace_strip_first = true;
    };
    // One step of the section (not a Sequence: component_steps.h flattens those).
    static Result<Step> read_step(const std::string& type, const nlohmann::json& spec);
    static std::vector<std::string> apply(const Step& step, std::vector<std::string> tokens, bool at_start);

    std::vector<Step> steps_;
    bool has_decoder_ = false;
    bool has_byte_fallback_ = false;
};

}  // namespace lmrun
