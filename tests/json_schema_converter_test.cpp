// JSON Schema to grammar, checked by an independent validator: for every schema
// of tests/structured/schemas.json (every supported keyword), random
// generations over the real Qwen3 vocabulary (a token drawn uniformly from each
// mask: nothing here wants valid JSON) all end and all validate with
// python3-jsonschema; a text the grammar accepts after random edits still
// validates; unsupported keywords and malformed schemas are errors naming them.
#include "structured/json_schema_converter.h"

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "structured/grammar_compiler.h"
#include "structured_test_util.h"
#include "test_util.h"

namespace lmrun::structured {
namespace {

using testing::Json;

std::shared_ptr<const CompiledGrammar> compile_schema(const Json& schema) {
    auto grammar = grammar_from_json_schema(schema);
    EXPECT_TRUE(grammar.ok()) << schema.dump() << ": " << (grammar.ok() ? "" : grammar.error().message);
    return testing::compile_or_die(*grammar, testing::qwen3_vocabulary());
}

TEST(JsonSchemaConverter, RandomGenerationsEndAndValidate) {
    const auto schemas = testing::schema_corpus();
    ASSERT_GE(schemas.size(), 30u);
    std::vector<std::pair<Json, std::string>> records;
    std::vector<std::string> labels;
    for (const auto& [name, schema] : schemas) {
        auto compiled = compile_schema(schema);
        for (uint64_t seed = 0; seed < 6; ++seed) {
            std::mt19937_64 rng(seed * 7919 + std::hash<std::string>()(name));
            GrammarMatcher matcher(compiled);
            bool terminated = false;
            const std::string text = testing::random_generation(matcher, rng, 3000, terminated);
            ASSERT_TRUE(terminated) << name << " seed " << seed << " did not end: " << text;
            records.emplace_back(schema, text);
            labels.push_back(name + " seed " + std::to_string(seed));
        }
    }
    const auto results = testing::validate_with_python(records);
    for (size_t i = 0; i < results.size(); ++i)
        EXPECT_TRUE(results[i].valid) << labels[i] << ": " << records[i].second << "\n  " << results[i].error;
}

// Soundness on near misses: random edits of valid outputs that the grammar still
// accepts must validate too.
TEST(JsonSchemaConverter, AcceptedEditsStillValidate) {
    std::mt19937_64 rng(99);
    const std::string edits = "0123456789-.,:\"{}[] aeEtrufnl\\";
    std::vector<std::pair<Json, std::string>> records;
    int num_rejected = 0;
    for (const auto& [name, schema] : testing::schema_corpus()) {
        auto compiled = compile_schema(schema);
        GrammarMatcher generator(compiled);
        bool terminated = false;
        const std::string base = testing::random_generation(generator, rng, 3000, terminated);
        ASSERT_TRUE(terminated);
        for (int trial = 0; trial < 60; ++trial) {
            std::string text = base;
            const size_t pos = text.empty() ? 0 : rng() % text.size();
            switch (rng() % 3) {
                case 0:
                    if (!text.empty()) text.erase(pos, 1);
                    break;
                case 1:
                    text.insert(pos, 1, edits[rng() % edits.size()]);
                    break;
                default:
                    if (!text.empty()) text[pos] = edits[rng() % edits.size()];
                    break;
            }
            GrammarMatcher matcher(compiled);
            if (matcher.accept_bytes(text) && matcher.can_end()) {
                records.emplace_back(schema, text);
            } else {
                ++num_rejected;
            }
        }
    }
    EXPECT_GT(num_rejected, 0);
    ASSERT_FALSE(records.empty());
    const auto results = testing::validate_with_python(records);
    for (size_t i = 0; i < results.size(); ++i)
        EXPECT_TRUE(results[i].valid)
            << records[i].first.dump() << ": " << records[i].second << "\n  " << results[i].error;
}

TEST(JsonSchemaConverter, AcceptsHandWrittenInstances) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]})",
         R"({"a": -12, "b": "x\"y\\u00e9\n"})"},
        {R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]})",
         R"({"b": ""})"},
        {R"({"type": "array", "items": {"type": "number"}})", R"([1.5, -0.25, 3e10, 0, 2E-3])"},
        {R"({"type": "integer", "minimum": -1234, "maximum": 56789})", "-1234"},
        {R"({"type": "integer", "minimum": -1234, "maximum": 56789})", "56789"},
        {R"({"type": "number", "minimum": -3, "maximum": 2})", "-2.999"},
        {R"({"type": "number", "minimum": -3, "maximum": 2})", "1.5"},
        {R"({"type": "string", "format": "date-time"})", R"("2024-06-30T23:59:59.123+05:30")"},
        {R"({"type": "object"})", R"({"any": [1, {"b": null}], "c": true})"},
        {R"({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"})",
         "[[], [[[]]]]"},
        // JSON Pointer escapes in $ref (RFC 6901): ~1 is '/', ~0 is '~', "~01" is "~1".
        {R"({"$defs": {"a/b": {"type": "integer"}}, "$ref": "#/$defs/a~1b"})", "42"},
        {R"({"$defs": {"c~d": {"type": "string"}}, "$ref": "#/$defs/c~0d"})", R"("x")"},
        {R"({"$defs": {"~1": {"type": "boolean"}}, "$ref": "#/$defs/~01"})", "true"},
    };
    for (const auto& [schema_text, instance] : cases) {
        auto compiled = compile_schema(Json::parse(schema_text));
        GrammarMatcher matcher(compiled);
        EXPECT_TRUE(matcher.accept_bytes(instance) && matcher.can_end()) << schema_text << " on " << instance;
    }
    // Extra members never repeat a declared name, however it is spelled.
    {
        auto compiled = compile_schema(Json::parse(
            R"({"type": "object", "properties": {"ab": {"type": "integer"}}, "required": ["ab"], "additionalProperties": {"type": "null"}})"));
        for (const char* ok : {R"({"ab": 1, "a": null})", R"({"ab": 1, "abc": null, "b": null})",
                               R"({"ab": 1, "\n": null})"}) {
            GrammarMatcher matcher(compiled);
            EXPECT_TRUE(matcher.accept_bytes(ok) && matcher.can_end()) << ok;
        }
        for (const char* duplicate :
             {R"({"ab": 1, "ab": null})", R"({"ab": 1, "\u0061b": null})", R"({"ab": 1, "a\u0062": null})"}) {
            GrammarMatcher matcher(compiled);
            EXPECT_FALSE(matcher.accept_bytes(duplicate) && matcher.can_end()) << duplicate;
        }
    }
    // Just past the bounds: rejected.
    const std::vector<std::pair<const char*, const char*>> rejected = {
        {R"({"type": "integer", "minimum": -1234, "maximum": 56789})", "-1235"},
        {R"({"type": "integer", "minimum": -1234, "maximum": 56789})", "56790"},
        {R"({"type": "number", "minimum": -3, "maximum": 2})", "2.5"},
        {R"({"type": "number", "minimum": -3, "maximum": 2})", "-3.5"},
        {R"({"type": "string", "maxLength": 2})", R"("abc")"},
        {R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})", R"({})"},
        {R"({"type": "object", "properties": {"a": {"type": "integer"}}})", R"({"a": 1, "b": 2})"},
    };
    for (const auto& [schema_text, instance] : rejected) {
        auto compiled = compile_schema(Json::parse(schema_text));
        GrammarMatcher matcher(compiled);
        EXPECT_FALSE(matcher.accept_bytes(instance) && matcher.can_end())
            << schema_text << " on " << instance;
    }
}

TEST(JsonSchemaConverter, UnsupportedKeywordsAreNamed) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {R"({"type": "array", "uniqueItems": true})", "'uniqueItems'"},
        {R"({"type": "array", "contains": {"type": "integer"}})", "'contains'"},
        {R"({"type": "object", "patternProperties": {"^a": {}}})", "'patternProperties'"},
        {R"({"not": {"type": "string"}})", "'not'"},
        {R"({"if": {"type": "string"}, "then": {"maxLength": 3}})", "'if'"},
        {R"({"type": "number", "multipleOf": 3})", "'multipleOf'"},
        {R"({"type": "object", "maxProperties": 2})", "'maxProperties'"},
        {R"({"properties": {"a": {"type": "array", "items": {"dependentRequired": {}}}}})",
         "'dependentRequired' at #/properties/a/items"},
        {R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})", "'allOf'"},
        {R"({"type": "string", "format": "uri"})", "\"uri\""},
    };
    for (const auto& [schema_text, expected] : cases) {
        auto grammar = grammar_from_json_schema(Json::parse(schema_text));
        ASSERT_FALSE(grammar.ok()) << schema_text;
        EXPECT_NE(grammar.error().message.find(expected), std::string::npos) << grammar.error().message;
    }
}

TEST(JsonSchemaConverter, MalformedSchemasAreErrors) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {R"({"type": "strnig"})", "unknown type"},
        {R"({"$ref": "#/$defs/missing"})", "points to nothing"},
        {R"({"$ref": "http://example.com/schema"})", "only local $ref"},
        {R"({"type": "string", "minLength": 5, "maxLength": 2})", "below minLength"},
        {R"({"type": "integer", "minimum": 5, "maximum": 2})", "between the minimum and the maximum"},
        {R"({"type": "array", "minItems": 3, "maxItems": 1})", "below minItems"},
        {R"({"type": "string", "pattern": "(unclosed"})", "pattern: invalid regex"},
        {R"({"enum": []})", "non-empty"},
        {R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", "allows no value"},
        {R"(42)", "must be an object"},
    };
    for (const auto& [schema_text, expected] : cases) {
        auto grammar = grammar_from_json_schema(Json::parse(schema_text));
        ASSERT_FALSE(grammar.ok()) << schema_text;
        EXPECT_NE(grammar.error().message.find(expected), std::string::npos) << grammar.error().message;
    }
    GrammarCompiler compiler(testing::qwen3_vocabulary());
    auto not_json = compiler.compile(StructuredOutputsParams::json_schema("{\"type\": "));
    ASSERT_FALSE(not_json.ok());
    EXPECT_NE(not_json.error().message.find("not valid JSON"), std::string::npos);
    auto too_deep = compiler.compile(StructuredOutputsParams::json_schema(std::string(5000, '[')));
    ASSERT_FALSE(too_deep.ok());
    EXPECT_NE(too_deep.error().message.find("deeper"), std::string::npos);
}

}  // namespace
}  // namespace lmrun::structured
