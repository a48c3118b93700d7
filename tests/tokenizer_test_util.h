// The golden tokenizers of ../shared/testdata, each loaded once per test run, for the
// tokenizer and detokenizer tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace lmrun::testing {

// The tokenizer at testdata `relative`: a tokenizer.json file (Tokenizer::from_file) or a
// model directory (Tokenizer::from_dir). Loaded on first use; a load error throws (the test fails).
const Tokenizer& testdata_tokenizer(const std::string& relative);
// Qwen3's tokenizer.json (byte-level BPE with added special tokens).
const Tokenizer& qwen3_tokenizer();
// stories260k's (Llama 2 style SentencePiece BPE), through from_dir as the engine loads it.
const Tokenizer& stories_tokenizer();

// A JSON array of token ids (as the golden files write them).
std::vector<int32_t> token_ids_of(const nlohmann::json& array);

}  // namespace lmrun::testing
