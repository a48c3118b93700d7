// Fast reader for tokenizer.json. A DOM of the Qwen3 file (151k vocab entries,
// 151k merges) takes most of a second to build, so a SAX pass streams
// model.vocab and model.merges straight into flat tables and builds the DOM only
// for the small remaining sections (their places in the DOM hold null).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/json_io.h"
#include "core/result.h"
#include "tokenizer/bpe_model.h"

namespace lmrun {

// nlohmann::json's noexcept move calls its invariant check, which clang-tidy takes for a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct TokenizerJson {
    nlohmann::json spec;  // the file, with model.vocab / model.merges set to null
    BpeTables tables;
    bool has_tables = false;  // false when the file had no model.vocab / model.merges
};

// tokenizer.json files nest 6 levels deep and take tens of MB at most.
inline constexpr JsonLimits kTokenizerJsonLimits{64, size_t(256) << 20};

// Errors name `path` (their subject): NotFound, Corrupt (malformed), ResourceExhausted
// (larger or more deeply nested than `limits`).
Result<TokenizerJson> read_tokenizer_json(const std::string& path,
                                          const JsonLimits& limits = kTokenizerJsonLimits);
// The same from text already in memory; `source` names it in errors.
Result<TokenizerJson> parse_tokenizer_json(std::string_view text, const std::string& source,
                                           const JsonLimits& limits = kTokenizerJsonLimits);

}  // namespace lmrun
