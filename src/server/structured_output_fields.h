// The request fields that constrain a generation's output, in the three
// spellings clients send: OpenAI's response_format ({"type": "json_object"} or
// {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}), vLLM's
// structured_outputs ({"json"}, {"regex"}, {"choice"}, {"grammar"},
// {"json_object": true}) and vLLM's older guided_json / guided_regex /
// guided_choice / guided_grammar. At most one may be given; a malformed one is a
// 400 naming the field. The constraint itself (schema keywords, regex and grammar
// syntax) is checked when it is compiled (see completion_endpoints.cpp).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/request_fields.h"
#include "structured/structured_outputs_params.h"

namespace lmrun::server {

struct RequestedConstraint {
    structured::StructuredOutputsParams params;
    std::string field;  // the request field that asked for it, for error messages
};

MaybeError read_structured_outputs(const nlohmann::ordered_json& body,
                                   std::optional<RequestedConstraint>& out);

}  // namespace lmrun::server
