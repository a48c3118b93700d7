#include "server/tool_request.h"

#include <algorithm>

namespace lmrun::server {
namespace {

using Json = nlohmann::ordered_json;

MaybeError check_tool(const Json& tool, size_t index) {
    const std::string field = "tools[" + std::to_string(index) + "]";
    if (!tool.is_object()) return wrong_type(field, "an object");
    const Json* type = find_field(tool, "type");
    if (!type || *type != Json("function"))
        return invalid_request(field + ".type must be \"function\"", field + ".type");
    const Json* function = find_field(tool, "function");
    if (!function || !function->is_object()) return wrong_type(field + ".function", "an object");
    const Json* name = find_field(*function, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
        return invalid_request(field + ".function.name must be a non-empty string", field + ".function.name");
    if (const Json* description = find_field(*function, "description");
        description && !description->is_string())
        return wrong_type(field + ".function.description", "a string");
    if (const Json* parameters = find_field(*function, "parameters"); parameters && !parameters->is_object())
        return wrong_type(field + ".function.parameters", "a JSON Schema object");
    return std::nullopt;
}

// A function's parameters schema (an empty object schema when it declares none).
Json parameters_of(const Json& tool) {
    const Json* parameters = find_field(tool["function"], "parameters");
    return parameters ? *parameters : Json{{"type", "object"}, {"properties", Json::object()}};
}

}  // namespace

MaybeError read_tool_request(const Json& body, ToolRequest& out) {
    if (const Json* tools = find_field(body, "tools")) {
        if (!tools->is_array()) return wrong_type("tools", "an array of function definitions");
        for (size_t i = 0; i < tools->size(); ++i) {
            if (auto error = check_tool((*tools)[i], i)) return error;
        }
        out.tools = *tools;
    }
    if (auto error = read_bool(body, "parallel_tool_calls", out.parallel_tool_calls)) return error;
    const Json* choice = find_field(body, "tool_choice");
    if (!choice) {
        out.choice = out.tools.empty() ? ToolChoice::None : ToolChoice::Auto;
        return std::nullopt;
    }
    if (choice->is_string()) {
        const std::string value = choice->get<std::string>();
        if (value == "none") {
            out.choice = ToolChoice::None;
        } else if (value == "auto") {
            out.choice = ToolChoice::Auto;
        } else if (value == "required") {
            out.choice = ToolChoice::Required;
        } else {
            return invalid_request("tool_choice must be \"none\", \"auto\", \"required\" or a named function",
                                   "tool_choice");
        }
    } else if (choice->is_object()) {
        const Json* function = find_field(*choice, "function");
        const Json* name = function && function->is_object() ? find_field(*function, "name") : nullptr;
        if (!name || !name->is_string())
            return invalid_request(
                "tool_choice must name a function: {\"type\": \"function\", \"function\": {\"name\": ...}}",
                "tool_choice");
        out.choice = ToolChoice::Named;
        out.function_name = name->get<std::string>();
    } else {
        return wrong_type("tool_choice", "a string or an object");
    }
    if (out.choice != ToolChoice::None && out.tools.empty())
        return invalid_request("tool_choice needs tools", "tool_choice");
    if (out.choice == ToolChoice::Named) {
        const bool known = std::any_of(out.tools.begin(), out.tools.end(), [&](const Json& tool) {
            return tool["function"]["name"] == Json(out.function_name);
        });
        if (!known) {
            return invalid_request(
                "tool_choice names the function \"" + out.function_name + "\", which is not among the tools",
                "tool_choice");
        }
    }
    return std::nullopt;
}

Json tool_call_schema(const ToolRequest& request) {
    if (request.choice == ToolChoice::Named) {
        for (const Json& tool : request.tools) {
            if (tool["function"]["name"] == Json(request.function_name)) return parameters_of(tool);
        }
    }
    Json branches = Json::array();
    for (const Json& tool : request.tools) {
        Json properties = Json::object();
        properties["name"] = Json{{"type", "string"}, {"enum", Json::array({tool["function"]["name"]})}};
        properties["parameters"] = parameters_of(tool);
        branches.push_back(Json{{"type", "object"},
                                {"properties", std::move(properties)},
                                {"required", Json::array({"name", "parameters"})},
                                {"additionalProperties", false}});
    }
    Json schema = {{"type", "array"}, {"items", Json{{"anyOf", std::move(branches)}}}, {"minItems", 1}};
    if (!request.parallel_tool_calls) schema["maxItems"] = 1;
    return schema;
}

}  // namespace lmrun::server
