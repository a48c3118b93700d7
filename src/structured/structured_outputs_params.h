// What a request asks its output to match: vLLM's StructuredOutputsParams. One
// of a JSON Schema (as JSON text), any JSON object, a regex, a choice among
// strings, or an EBNF grammar. SamplingParams carries it; the engine compiles
// it (GrammarCompiler, cached by cache_key()) and constrains the sequence.
//
// Reasoning models think before they answer: with activate_after_token_id set
// (e.g. </think>), the output is free until that token is generated and the
// constraint applies to what follows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "structured/grammar.h"

namespace lmrun::structured {

struct StructuredOutputsParams {
    enum class Kind { JsonSchema, JsonObject, Regex, Choice, Grammar };

    Kind kind = Kind::JsonObject;
    std::string text;  // JsonSchema: the schema (JSON text); Regex: the pattern; Grammar: EBNF
    std::vector<std::string> choices;  // Choice
    std::optional<int32_t> activate_after_token_id;

    static StructuredOutputsParams json_schema(std::string schema_json);
    static StructuredOutputsParams json_object();
    static StructuredOutputsParams regex(std::string pattern);
    static StructuredOutputsParams choice(std::vector<std::string> choices);
    static StructuredOutputsParams grammar(std::string ebnf);

    // Identifies the constraint (not activate_after_token_id, which does not change the grammar).
    std::string cache_key() const;
    // "json schema", "regex", ... (for messages).
    const char* kind_name() const;
};

// The grammar a constraint stands for. Errors name the problem (an unsupported
// keyword and where it is, a regex or grammar syntax error with its position).
Result<Grammar> build_grammar(const StructuredOutputsParams& params);

}  // namespace lmrun::structured
