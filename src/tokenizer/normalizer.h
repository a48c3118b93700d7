// tokenizer.json "normalizer": a flat list of string rewrites applied in order to
// each piece of input text between added tokens (HF applies it per piece, so
// Prepend adds its prefix to every piece). Supported types: Sequence, NFC, NFD,
// NFKC, NFKD, Prepend, Replace, Lowercase, Strip. Input and output are UTF-8.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"

namespace lmrun {

class Normalizer {
  public:
    // `spec` may be null (no normalization).
    static Result<Normalizer> from_json(const nlohmann::json& spec);
    std::string normalize(std::string_view text) const;
    bool empty() const { return steps_.empty(); }

  private:
    enum class Kind { Unicode, Prepend, Replace, Lowercase, Strip };
    struct Step {
        Kind kind = Kind::Unicode;
        unicode::NormalForm form = unicode::NormalForm::Nfc;
        std::string text;  // Prepend prefix or Replace content
        Pattern pattern = Pattern::literal("");
        bool strip_left = false;
        bool strip_right = false;
    };
    // One step of the section (not a Sequence: component_steps.h flattens those).
    static Result<Step> read_step(const std::string& type, const nlohmann::json& spec);
    static std::string apply(const Step& step, std::string text);

    std::vector<Step> steps_;
};

}  // namespace lmrun
