// Tool-calling fields of a chat request: defaults, validation (400s naming the
// field), and the schemas that constrain required / named tool choices.
#include "server/tool_request.h"

#include <gtest/gtest.h>

#include "server/openai_response.h"

namespace lmrun::server {
namespace {

const char* kToolsField =
    R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
                         {"type": "function", "function": {"name": "now"}}])";

ToolRequest read_with_tools(const std::string& extra, std::optional<ApiError>* error = nullptr) {
    Json body = Json::parse(std::string(R"({"tools": )") + kToolsField + extra + "}");
    ToolRequest out;
    auto result = read_tool_request(body, out);
    if (error) *error = result;
    EXPECT_TRUE(error || !result) << (result ? result->message : "");
    return out;
}

TEST(ToolRequest, ChoicesAndDefaults) {
    EXPECT_EQ(read_with_tools("").choice, ToolChoice::Auto) << "tools without tool_choice mean auto";
    EXPECT_EQ(read_with_tools(R"(, "tool_choice": "none")").choice, ToolChoice::None);
    EXPECT_EQ(read_with_tools(R"(, "tool_choice": "required")").choice, ToolChoice::Required);
    ToolRequest named =
        read_with_tools(R"(, "tool_choice": {"type": "function", "function": {"name": "now"}})");
    EXPECT_EQ(named.choice, ToolChoice::Named);
    EXPECT_EQ(named.function_name, "now");
    EXPECT_FALSE(read_with_tools(R"(, "parallel_tool_calls": false)").parallel_tool_calls);
    ToolRequest none;
    ASSERT_FALSE(read_tool_request(Json::object(), none));
    EXPECT_EQ(none.choice, ToolChoice::None);
}

TEST(ToolRequest, BadToolsAre400s) {
    const std::vector<std::pair<std::string, const char*>> cases = {
        {R"(, "tool_choice": "sometimes")", "tool_choice"},
        {R"(, "tool_choice": {"type": "function", "function": {"name": "missing"}})", "tool_choice"},
        {R"(, "tool_choice": {"type": "function"})", "tool_choice"},
        {R"(, "parallel_tool_calls": "yes")", "parallel_tool_calls"},
    };
    for (const auto& [extra, field] : cases) {
        std::optional<ApiError> error;
        read_with_tools(extra, &error);
        ASSERT_TRUE(error) << extra;
        EXPECT_EQ(error->param, field) << error->message;
    }
    for (const char* tools :
         {R"([{"type": "function"}])", R"([{"type": "code", "function": {"name": "x"}}])",
          R"([{"type": "function", "function": {"name": ""}}])",
          R"([{"type": "function", "function": {"name": "x", "parameters": 3}}])", R"({})"}) {
        ToolRequest out;
        auto error = read_tool_request(Json::parse(std::string(R"({"tools": )") + tools + "}"), out);
        ASSERT_TRUE(error) << tools;
        EXPECT_EQ(error->param.rfind("tools", 0), 0u) << error->param;
    }
    ToolRequest out;
    auto error = read_tool_request(Json::parse(R"({"tool_choice": "required"})"), out);
    ASSERT_TRUE(error);
    EXPECT_NE(error->message.find("needs tools"), std::string::npos);
}

TEST(ToolRequest, ConstraintSchemas) {
    ToolRequest named =
        read_with_tools(R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
    EXPECT_EQ(tool_call_schema(named), Json::parse(kToolsField)[0]["function"]["parameters"]);
    ToolRequest required = read_with_tools(R"(, "tool_choice": "required", "parallel_tool_calls": false)");
    const Json schema = tool_call_schema(required);
    EXPECT_EQ(schema["type"], "array");
    EXPECT_EQ(schema["minItems"], 1);
    EXPECT_EQ(schema["maxItems"], 1);
    ASSERT_EQ(schema["items"]["anyOf"].size(), 2u);
    EXPECT_EQ(schema["items"]["anyOf"][1]["properties"]["name"]["enum"], Json::array({"now"}));
    EXPECT_EQ(schema["items"]["anyOf"][1]["properties"]["parameters"]["type"], "object");
}

}  // namespace
}  // namespace lmrun::server
