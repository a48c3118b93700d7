#include "server/structured_output_fields.h"

#include <set>

namespace lmrun::server {
namespace {

using Json = nlohmann::ordered_json;
using structured::StructuredOutputsParams;

// A schema given as an object (or as JSON text, which vLLM also accepts).
MaybeError schema_text(const Json& value, const std::string& field, std::string& out) {
    if (value.is_object() || value.is_boolean()) {
        out = value.dump();
        return std::nullopt;
    }
    if (value.is_string()) {
        Json parsed = Json::parse(value.get<std::string>(), nullptr, /*allow_exceptions=*/false);
        if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_boolean()))
            return invalid_request(field + " must be a JSON Schema (an object, or its JSON text)", field);
        out = value.get<std::string>();
        return std::nullopt;
    }
    return wrong_type(field, "a JSON Schema object");
}

MaybeError string_field(const Json& value, const std::string& field, std::string& out) {
    if (!value.is_string()) return wrong_type(field, "a string");
    out = value.get<std::string>();
    if (out.empty()) return invalid_request(field + " must not be empty", field);
    return std::nullopt;
}

MaybeError choice_field(const Json& value, const std::string& field, std::vector<std::string>& out) {
    if (!value.is_array() || value.empty()) return wrong_type(field, "a non-empty array of strings");
    for (const Json& item : value) {
        if (!item.is_string()) return wrong_type(field, "a non-empty array of strings");
        out.push_back(item.get<std::string>());
    }
    return std::nullopt;
}

MaybeError read_response_format(const Json& format, std::optional<RequestedConstraint>& out) {
    const std::string field = "response_format";
    if (!format.is_object()) return wrong_type(field, "an object");
    const Json* type = find_field(format, "type");
    if (!type || !type->is_string()) return invalid_request("response_format.type must be a string", field);
    const std::string kind = type->get<std::string>();
    if (kind == "text") return std::nullopt;
    if (kind == "json_object") {
        out = RequestedConstraint{StructuredOutputsParams::json_object(), field};
        return std::nullopt;
    }
    if (kind != "json_schema") {
        return invalid_request(
            "response_format type \"" + kind + "\" is not supported (text, json_object, json_schema)", field);
    }
    const Json* json_schema = find_field(format, "json_schema");
    if (!json_schema || !json_schema->is_object())
        return invalid_request("response_format.json_schema must be an object with a \"schema\"", field);
    if (const Json* name = find_field(*json_schema, "name"); name && !name->is_string())
        return wrong_type("response_format.json_schema.name", "a string");
    if (const Json* strict = find_field(*json_schema, "strict"); strict && !strict->is_boolean())
        return wrong_type("response_format.json_schema.strict", "a boolean");
    const Json* schema = find_field(*json_schema, "schema");
    if (!schema) return invalid_request("response_format.json_schema.schema is required", field);
    std::string text;
    if (auto error = schema_text(*schema, "response_format.json_schema.schema", text)) return error;
    out = RequestedConstraint{StructuredOutputsParams::json_schema(std::move(text)), field};
    return std::nullopt;
}

// vLLM's structured_outputs object: exactly one of json, regex, choice, grammar, json_object.
MaybeError read_structured_object(const Json& value, std::optional<RequestedConstraint>& out) {
    const std::string field = "structured_outputs";
    if (!value.is_object()) return wrong_type(field, "an object");
    // Options that only tune whitespace or backends; never less constrained here.
    static const std::set<std::string> kIgnored = {"disable_any_whitespace",
                                                   "disable_additional_properties",
                                                   "whitespace_pattern",
                                                   "disable_fallback",
                                                   "backend",
                                                   "_backend",
                                                   "_backend_was_auto"};
    std::optional<RequestedConstraint> found;
    for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string& key = it.key();
        std::string name = field;
        name.append(".").append(key);
        if (it.value().is_null() || kIgnored.count(key)) continue;
        if (key == "json_object" && it.value() == Json(false)) continue;
        if (found)
            return invalid_request(field + " must set only one of json, regex, choice, grammar, json_object",
                                   field);
        StructuredOutputsParams params;
        if (key == "json") {
            std::string text;
            if (auto error = schema_text(it.value(), name, text)) return error;
            params = StructuredOutputsParams::json_schema(std::move(text));
        } else if (key == "regex") {
            std::string text;
            if (auto error = string_field(it.value(), name, text)) return error;
            params = StructuredOutputsParams::regex(std::move(text));
        } else if (key == "choice") {
            std::vector<std::string> choices;
            if (auto error = choice_field(it.value(), name, choices)) return error;
            params = StructuredOutputsParams::choice(std::move(choices));
        } else if (key == "grammar") {
            std::string text;
            if (auto error = string_field(it.value(), name, text)) return error;
            params = StructuredOutputsParams::grammar(std::move(text));
        } else if (key == "json_object") {
            if (!it.value().is_boolean()) return wrong_type(name, "a boolean");
            params = StructuredOutputsParams::json_object();
        } else {
            return invalid_request(name + " is not supported", name);
        }
        found = RequestedConstraint{std::move(params), name};
    }
    out = std::move(found);
    return std::nullopt;
}

// guided_json / guided_regex / guided_choice / guided_grammar.
MaybeError read_guided(const Json& body, std::optional<RequestedConstraint>& out) {
    for (const char* key : {"guided_json", "guided_regex", "guided_choice", "guided_grammar"}) {
        const Json* value = find_field(body, key);
        if (!value) continue;
        if (out)
            return invalid_request(
                std::string("give only one of guided_json, guided_regex, guided_choice, guided_grammar"),
                key);
        const std::string name = key;
        StructuredOutputsParams params;
        if (name == "guided_json") {
            std::string text;
            if (auto error = schema_text(*value, name, text)) return error;
            params = StructuredOutputsParams::json_schema(std::move(text));
        } else if (name == "guided_regex") {
            std::string text;
            if (auto error = string_field(*value, name, text)) return error;
            params = StructuredOutputsParams::regex(std::move(text));
        } else if (name == "guided_choice") {
            std::vector<std::string> choices;
            if (auto error = choice_field(*value, name, choices)) return error;
            params = StructuredOutputsParams::choice(std::move(choices));
        } else {
            std::string text;
            if (auto error = string_field(*value, name, text)) return error;
            params = StructuredOutputsParams::grammar(std::move(text));
        }
        out = RequestedConstraint{std::move(params), name};
    }
    return std::nullopt;
}

}  // namespace

MaybeError read_structured_outputs(const Json& body, std::optional<RequestedConstraint>& out) {
    std::optional<RequestedConstraint> format, object, guided;
    if (const Json* value = find_field(body, "response_format")) {
        if (auto error = read_response_format(*value, format)) return error;
    }
    if (const Json* value = find_field(body, "structured_outputs")) {
        if (auto error = read_structured_object(*value, object)) return error;
    }
    if (auto error = read_guided(body, guided)) return error;
    std::vector<RequestedConstraint*> given;
    for (auto* candidate : {&format, &object, &guided}) {
        if (*candidate) given.push_back(&**candidate);
    }
    if (given.size() > 1) {
        return invalid_request(
            "give only one output constraint; got both " + given[0]->field + " and " + given[1]->field,
            given[1]->field);
    }
    if (!given.empty()) out = std::move(*given[0]);
    return std::nullopt;
}

}  // namespace lmrun::server
