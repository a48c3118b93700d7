// JSON Schema to Grammar. Supported keywords:
//   type (one or a list), enum, const, anyOf, oneOf, allOf (one subschema),
//   $ref / $defs / definitions (JSON pointers into the document; recursion works);
//   object: properties, required, additionalProperties (false / true / schema),
//           propertyNames (a string schema);
//   array:  items, prefixItems, minItems, maxItems, uniqueItems: false;
//   string: minLength, maxLength, pattern, format (date, time, date-time, uuid, email);
//   integer / number: minimum, maximum, exclusiveMinimum, exclusiveMaximum;
//   boolean, null; annotations (title, description, default, examples, ...) are ignored.
// Any other keyword is an error naming it and where it is: the output is never
// silently less constrained than the schema.
//
// Choices the grammar makes (each output still validates):
//   - properties come in the schema's order (callers should parse the schema as
//     ordered_json); optional ones may be left out;
//   - an object schema that lists properties but says nothing about
//     additionalProperties allows no others (OpenAI's strict mode, XGrammar's
//     default); one without properties allows any;
//   - extra members (additionalProperties) never repeat a declared name (keys are
//     spelled canonically, so no escape can hide a repeat);
//   - oneOf is generated as anyOf: exactly-one holds when the branches are disjoint;
//   - number bounds are rounded inward to integers ("where expressible");
//   - JSON spelling and size limits as json_value_grammar.h describes.
#pragma once

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "structured/grammar.h"

namespace lmrun::structured {

Result<Grammar> grammar_from_json_schema(const nlohmann::ordered_json& schema);
// Any JSON object (response_format {"type": "json_object"}).
Grammar json_object_grammar();

}  // namespace lmrun::structured
