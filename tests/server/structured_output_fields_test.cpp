// The output-constraint fields of a request: each spelling (response_format,
// structured_outputs, guided_*) becomes the same constraint; malformed ones and
// more than one at a time are 400s naming the field.
#include "server/structured_output_fields.h"

#include <gtest/gtest.h>

#include "server/openai_response.h"

namespace lmrun::server {
namespace {

using Kind = structured::StructuredOutputsParams::Kind;

std::optional<RequestedConstraint> read_constraint(const char* body,
                                                   std::optional<ApiError>* error = nullptr) {
    std::optional<RequestedConstraint> out;
    auto result = read_structured_outputs(Json::parse(body), out);
    if (error) *error = result;
    EXPECT_TRUE(error || !result) << (result ? result->message : "");
    return out;
}

TEST(StructuredOutputFields, EverySpellingGivesTheConstraint) {
    const char* schema =
        R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}})";
    for (
        const std::string& body :
        {std::string(
             R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": )") +
             schema + "}}}",
         std::string(R"({"structured_outputs": {"json": )") + schema + "}}",
         std::string(R"({"structured_outputs": {"json": )") + Json(schema).dump() + "}}",
         std::string(R"({"guided_json": )") + schema + "}"}) {
        auto constraint = read_constraint(body.c_str());
        ASSERT_TRUE(constraint) << body;
        EXPECT_EQ(constraint->params.kind, Kind::JsonSchema);
        // Key order survives (properties come out in the schema's order).
        EXPECT_EQ(Json::parse(constraint->params.text).dump(), Json::parse(schema).dump()) << body;
    }
    EXPECT_EQ(read_constraint(R"({"response_format": {"type": "json_object"}})")->params.kind,
              Kind::JsonObject);
    EXPECT_EQ(read_constraint(R"({"structured_outputs": {"json_object": true}})")->params.kind,
              Kind::JsonObject);
    EXPECT_FALSE(read_constraint(R"({"response_format": {"type": "text"}})"));
    auto regex =
        read_constraint(R"({"structured_outputs": {"regex": "[a-z]+", "disable_any_whitespace": true}})");
    EXPECT_EQ(regex->params.kind, Kind::Regex);
    EXPECT_EQ(regex->params.text, "[a-z]+");
    EXPECT_EQ(read_constraint(R"({"guided_regex": "x"})")->field, "guided_regex");
    auto choice = read_constraint(R"({"guided_choice": ["a", "b"]})");
    EXPECT_EQ(choice->params.choices, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(read_constraint(R"({"structured_outputs": {"choice": ["y"]}})")->params.kind, Kind::Choice);
    EXPECT_EQ(read_constraint(R"({"structured_outputs": {"grammar": "root ::= \"a\""}})")->params.kind,
              Kind::Grammar);
    EXPECT_EQ(read_constraint(R"({"guided_grammar": "root ::= \"a\""})")->field, "guided_grammar");
}

TEST(StructuredOutputFields, MalformedFieldsAre400sNamingThem) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {R"({"response_format": {"type": "json_schema"}})", "response_format"},
        {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})", "response_format"},
        {R"({"response_format": {"type": "xml"}})", "response_format"},
        {R"({"response_format": "json"})", "response_format"},
        {R"({"structured_outputs": {"regex": 5}})", "structured_outputs.regex"},
        {R"({"structured_outputs": {"choice": []}})", "structured_outputs.choice"},
        {R"({"structured_outputs": {"regex": "a", "choice": ["b"]}})", "structured_outputs"},
        {R"({"structured_outputs": {"structural_tag": "x"}})", "structured_outputs.structural_tag"},
        {R"({"guided_json": "{not json"})", "guided_json"},
        {R"({"guided_regex": "a", "guided_choice": ["b"]})", "guided_choice"},
        {R"({"response_format": {"type": "json_object"}, "guided_regex": "a"})", "guided_regex"},
    };
    for (const auto& [body, field] : cases) {
        std::optional<ApiError> error;
        read_constraint(body, &error);
        ASSERT_TRUE(error) << body;
        EXPECT_EQ(error->status, 400);
        EXPECT_EQ(error->param, field) << body << ": " << error->message;
    }
}

}  // namespace
}  // namespace lmrun::server
