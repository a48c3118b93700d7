#include "structured/structured_outputs_params.h"

#include <nlohmann/json.hpp>

#include "structured/ebnf_parser.h"
#include "structured/json_schema_converter.h"
#include "structured/regex_converter.h"

namespace lmrun::structured {
namespace {

constexpr int kMaxSchemaDepth = 128;

// Nesting of a JSON text, counted without building it (so deep input cannot overflow the parser's stack).
bool nested_within(const std::string& text, int limit) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > limit) return false;
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return true;
}

}  // namespace

StructuredOutputsParams StructuredOutputsParams::json_schema(std::string schema_json) {
    StructuredOutputsParams params;
    params.kind = Kind::JsonSchema;
    params.text = std::move(schema_json);
    return params;
}

StructuredOutputsParams StructuredOutputsParams::json_object() {
    return StructuredOutputsParams{};
}

StructuredOutputsParams StructuredOutputsParams::regex(std::string pattern) {
    StructuredOutputsParams params;
    params.kind = Kind::Regex;
    params.text = std::move(pattern);
    return params;
}

StructuredOutputsParams StructuredOutputsParams::choice(std::vector<std::string> choices) {
    StructuredOutputsParams params;
    params.kind = Kind::Choice;
    params.choices = std::move(choices);
    return params;
}

StructuredOutputsParams StructuredOutputsParams::grammar(std::string ebnf) {
    StructuredOutputsParams params;
    params.kind = Kind::Grammar;
    params.text = std::move(ebnf);
    return params;
}

const char* StructuredOutputsParams::kind_name() const {
    switch (kind) {
        case Kind::JsonSchema:
            return "json schema";
        case Kind::JsonObject:
            return "json object";
        case Kind::Regex:
            return "regex";
        case Kind::Choice:
            return "choice";
        case Kind::Grammar:
            return "grammar";
    }
    return "";
}

std::string StructuredOutputsParams::cache_key() const {
    std::string key = kind_name();
    key += '\n';
    if (kind == Kind::Choice) {
        // Length-prefixed, so that no two lists share a key.
        for (const std::string& choice : choices) key += std::to_string(choice.size()) + ":" + choice;
    } else {
        key += text;
    }
    return key;
}

Result<Grammar> build_grammar(const StructuredOutputsParams& params) {
    switch (params.kind) {
        case StructuredOutputsParams::Kind::JsonSchema: {
            if (!nested_within(params.text, kMaxSchemaDepth))
                return make_error("invalid JSON Schema: nested deeper than {} levels", kMaxSchemaDepth);
            auto schema = nlohmann::ordered_json::parse(params.text, nullptr, /*allow_exceptions=*/false);
            if (schema.is_discarded()) return make_error("invalid JSON Schema: not valid JSON");
            return grammar_from_json_schema(schema);
        }
        case StructuredOutputsParams::Kind::JsonObject:
            return json_object_grammar();
        case StructuredOutputsParams::Kind::Regex:
            return grammar_from_regex(params.text);
        case StructuredOutputsParams::Kind::Choice: {
            if (params.choices.empty()) return make_error("choice must list at least one string");
            Grammar grammar;
            std::vector<ExprId> alternatives;
            alternatives.reserve(params.choices.size());
            for (const std::string& choice : params.choices) alternatives.push_back(grammar.literal(choice));
            grammar.set_root(grammar.add_rule("root", grammar.choice(std::move(alternatives))));
            return grammar;
        }
        case StructuredOutputsParams::Kind::Grammar:
            return parse_ebnf(params.text);
    }
    return make_error("unknown structured output kind");
}

}  // namespace lmrun::structured
