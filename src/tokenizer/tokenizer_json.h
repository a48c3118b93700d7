// Fast reader for tokenizer.json. A DOM of the Qwen3 file (151k vocab entries,
// 151k merges) takes most of a second to build, so a SAX pass streams
// model.vocab and model.merges straight into flat tables and builds the DOM only
// for the small remaining sections (their places in the DOM hold null).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tokenizer/bpe_model.h"

namespace lmrun {

struct TokenizerJson {
    nlohmann::json spec;  // the file, with model.vocab / model.merges set to null
    BpeTables tables;
    bool has_tables = false;  // false when the file had no model.vocab / model.merges
};

// Errors name `path`.
Result<TokenizerJson> read_tokenizer_json(const std::string& path);

}  // namespace lmrun
