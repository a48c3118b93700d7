// JSON from untrusted text and files, bounded: every request body, config.json,
// tokenizer.json and safetensors header goes through here. The text is checked for
// nesting depth in a first, iterative pass (nlohmann's SAX parser keeps its own stack)
// before a document is built, so no input can make later recursive code (copies,
// dumps, our own walkers) overflow the stack; size is bounded by the caller's limit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace lmrun {

struct JsonLimits {
    int max_depth = 256;                   // arrays/objects nested inside each other
    size_t max_bytes = size_t(256) << 20;  // text (or file) size
};

// Parses `text`; `source` names it in errors ("config.json", "request body").
// Errors: Corrupt (malformed), ResourceExhausted (too deep or too large), with `source` as subject.
Result<nlohmann::json> parse_json(std::string_view text, std::string_view source,
                                  const JsonLimits& limits = {});

// Work counted while parsing, so tests can check the algorithm's cost without timing it.
struct JsonParseStats {
    size_t key_comparisons = 0;  // string equality tests made to find repeated object keys
};

// The same, keeping object keys in document order (request bodies: chat templates see the
// order, as Python's json does). Linear in the text: repeated keys are found through a hash
// table (nlohmann's ordered_map alone searches every key on each insert, quadratic for an
// object with many keys). A repeated key keeps its first position and takes its last value.
Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text, std::string_view source,
                                                  const JsonLimits& limits = {},
                                                  JsonParseStats* stats = nullptr);

// Reads and parses a whole file. Errors name the path: NotFound (cannot open), Corrupt, ResourceExhausted.
Result<nlohmann::json> read_json_file(const std::string& path, const JsonLimits& limits = {});

}  // namespace lmrun
