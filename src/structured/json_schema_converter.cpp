#include "structured/json_schema_converter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "structured/compiled_grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/json_value_grammar.h"
#include "structured/regex_converter.h"

namespace lmrun::structured {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 128;
constexpr int64_t kMaxSchemas = 20000;
constexpr int64_t kMaxCount = 100000;  // minItems, maxLength, ...

const std::set<std::string> kAnnotations = {
    "title",    "description", "default",          "examples",        "$schema", "$id",
    "$comment", "deprecated",  "readOnly",         "writeOnly",       "$defs",   "definitions",
    "$anchor",  "format_hint", "contentMediaType", "contentEncoding", "strict"};

const std::set<std::string> kObjectKeywords = {"properties", "required", "additionalProperties",
                                               "propertyNames"};
const std::set<std::string> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"};
const std::set<std::string> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
const std::set<std::string> kOtherKeywords = {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"};

bool is_supported(const std::string& key) {
    return kAnnotations.count(key) || kObjectKeywords.count(key) || kArrayKeywords.count(key) ||
           kStringKeywords.count(key) || kNumberKeywords.count(key) || kOtherKeywords.count(key);
}

// "~" and "/" as a JSON pointer escapes them.
std::string pointer_token(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

bool matches_type(const Json& value, const std::string& type) {
    if (type == "string") return value.is_string();
    if (type == "integer")
        return value.is_number_integer() ||
               (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
    if (type == "number") return value.is_number();
    if (type == "boolean") return value.is_boolean();
    if (type == "null") return value.is_null();
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    return false;
}

class SchemaConverter {
  public:
    explicit SchemaConverter(const Json& root) : root_(root), values_(grammar_) {}

    Result<Grammar> run() {
        const RuleId root = grammar_.add_rule("root");
        LMRUN_ASSIGN_OR_RETURN(ExprId body, convert(root_, "#", 0));
        grammar_.set_body(root, body);
        grammar_.set_root(root);
        return std::move(grammar_);
    }

  private:
    template <typename... Args>
    Error error(const std::string& path, fmt::format_string<Args...> format, Args&&... args) const {
        return make_error("invalid JSON Schema at {}: {}", path,
                          fmt::format(format, std::forward<Args>(args)...));
    }

    Status check_keywords(const Json& schema, const std::string& path) const {
        for (auto it = schema.begin(); it != schema.end(); ++it) {
            if (!is_supported(it.key()))
                return make_error("unsupported JSON Schema keyword '{}' at {}", it.key(), path);
        }
        if (schema.contains("uniqueItems") && schema["uniqueItems"] != Json(false))
            return make_error("unsupported JSON Schema keyword 'uniqueItems' (true) at {}", path);
        return ok_status();
    }

    // Keywords that constrain (not annotations), other than `except`.
    std::vector<std::string> constraints_besides(const Json& schema,
                                                 const std::set<std::string>& except) const {
        std::vector<std::string> out;
        for (auto it = schema.begin(); it != schema.end(); ++it) {
            if (!kAnnotations.count(it.key()) && !except.count(it.key())) out.push_back(it.key());
        }
        return out;
    }

    Result<const Json*> resolve(const std::string& ref, const std::string& path) const {
        if (ref.empty() || ref[0] != '#')
            return error(path, "only local $ref (\"#...\") is supported, got \"{}\"", ref);
        const Json* node = &root_;
        size_t pos = 1;
        while (pos < ref.size()) {
            if (ref[pos] != '/') return error(path, "malformed $ref \"{}\"", ref);
            size_t next = ref.find('/', pos + 1);
            if (next == std::string::npos) next = ref.size();
            std::string token;  // the reference token with ~1 and ~0 unescaped (RFC 6901)
            for (size_t k = pos + 1; k < next; ++k) {
                const bool escape = ref[k] == '~' && k + 1 < next && (ref[k + 1] == '0' || ref[k + 1] == '1');
                token += escape ? (ref[++k] == '1' ? '/' : '~') : ref[k];
            }
            if (node->is_object() && node->contains(token)) {
                node = &(*node)[token];
            } else if (node->is_array() && !token.empty() &&
                       std::all_of(token.begin(), token.end(), ::isdigit) &&
                       std::stoul(token) < node->size()) {
                node = &(*node)[std::stoul(token)];
            } else {
                return error(path, "$ref \"{}\" points to nothing", ref);
            }
            pos = next;
        }
        return node;
    }

    Result<ExprId> convert_ref(const std::string& ref, const std::string& path, int depth) {
        auto found = ref_rules_.find(ref);
        if (found != ref_rules_.end()) return grammar_.ref(found->second);
        LMRUN_ASSIGN_OR_RETURN(const Json* target, resolve(ref, path));
        std::string name = ref == "#" ? "root-ref" : ref.substr(ref.rfind('/') + 1);
        const RuleId rule = grammar_.add_rule(name.empty() ? "ref" : name);
        ref_rules_[ref] = rule;  // before converting: recursive references find it
        LMRUN_ASSIGN_OR_RETURN(ExprId body, convert(*target, ref, depth + 1));
        grammar_.set_body(rule, body);
        return grammar_.ref(rule);
    }

    Result<ExprId> convert(const Json& schema, const std::string& path, int depth) {
        if (depth > kMaxDepth) return error(path, "nested deeper than {} levels", kMaxDepth);
        if (++num_schemas_ > kMaxSchemas) return error(path, "more than {} subschemas", kMaxSchemas);
        if (schema.is_boolean()) {
            if (schema.get<bool>()) return values_.any_value();
            return error(path, "the schema false allows no value");
        }
        if (!schema.is_object()) return error(path, "a schema must be an object or a boolean");
        LMRUN_RETURN_IF_ERROR(check_keywords(schema, path));
        if (schema.contains("$ref")) {
            auto others = constraints_besides(schema, {"$ref"});
            if (!others.empty())
                return error(path, "keywords next to $ref are not supported (found '{}')", others[0]);
            if (!schema["$ref"].is_string()) return error(path, "$ref must be a string");
            return convert_ref(schema["$ref"].get<std::string>(), path, depth);
        }
        for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
            if (!schema.contains(combinator)) continue;
            auto others = constraints_besides(schema, {combinator});
            if (!others.empty()) {
                return error(path, "{} together with other keywords is not supported (found '{}')",
                             combinator, others[0]);
            }
            return convert_combinator(schema, combinator, path, depth);
        }
        std::vector<std::string> types;
        LMRUN_RETURN_IF_ERROR(read_types(schema, path, types));
        if (schema.contains("enum") || schema.contains("const")) return convert_enum(schema, types, path);
        if (types.empty()) return values_.any_value();
        std::vector<ExprId> alternatives;
        for (const std::string& type : types) {
            LMRUN_ASSIGN_OR_RETURN(ExprId alternative, convert_typed(schema, type, path, depth));
            alternatives.push_back(alternative);
        }
        return grammar_.choice(std::move(alternatives));
    }

    Result<ExprId> convert_combinator(const Json& schema, const char* combinator, const std::string& path,
                                      int depth) {
        const Json& list = schema[combinator];
        if (!list.is_array() || list.empty()) return error(path, "{} must be a non-empty array", combinator);
        if (std::string(combinator) == "allOf" && list.size() != 1)
            return make_error("unsupported JSON Schema keyword 'allOf' with more than one subschema at {}",
                              path);
        std::vector<ExprId> alternatives;
        for (size_t i = 0; i < list.size(); ++i) {
            LMRUN_ASSIGN_OR_RETURN(ExprId alternative,
                                   convert(list[i], fmt::format("{}/{}/{}", path, combinator, i), depth + 1));
            alternatives.push_back(alternative);
        }
        return grammar_.choice(std::move(alternatives));
    }

    // The schema's types, given or implied by its keywords; empty = any value.
    Status read_types(const Json& schema, const std::string& path, std::vector<std::string>& types) const {
        static const std::set<std::string> kTypes = {"string", "integer", "number", "boolean",
                                                     "null",   "object",  "array"};
        if (schema.contains("type")) {
            const Json& type = schema["type"];
            if (type.is_string()) {
                types.push_back(type.get<std::string>());
            } else if (type.is_array() && !type.empty()) {
                for (const Json& item : type) {
                    if (!item.is_string()) return error(path, "type must be a string or an array of strings");
                    types.push_back(item.get<std::string>());
                }
            } else {
                return error(path, "type must be a string or a non-empty array of strings");
            }
            for (const std::string& t : types) {
                if (!kTypes.count(t)) return error(path, "unknown type \"{}\"", t);
            }
            return ok_status();
        }
        auto has_any = [&](const std::set<std::string>& keys) {
            return std::any_of(keys.begin(), keys.end(),
                               [&](const std::string& k) { return schema.contains(k); });
        };
        if (has_any(kObjectKeywords)) types.push_back("object");
        if (has_any(kArrayKeywords)) types.push_back("array");
        if (has_any(kStringKeywords)) types.push_back("string");
        if (has_any(kNumberKeywords)) types.push_back("number");
        return ok_status();
    }

    Result<ExprId> convert_enum(const Json& schema, const std::vector<std::string>& types,
                                const std::string& path) {
        std::vector<Json> values;
        if (schema.contains("const")) {
            values.push_back(schema["const"]);
        } else {
            if (!schema["enum"].is_array() || schema["enum"].empty())
                return error(path, "enum must be a non-empty array");
            for (const Json& value : schema["enum"]) values.push_back(value);
        }
        std::vector<ExprId> alternatives;
        for (const Json& value : values) {
            const bool typed =
                types.empty() || std::any_of(types.begin(), types.end(),
                                             [&](const std::string& t) { return matches_type(value, t); });
            if (typed) alternatives.push_back(values_.literal_value(value));
        }
        if (alternatives.empty()) return error(path, "no enum or const value has the schema's type");
        return grammar_.choice(std::move(alternatives));
    }

    Result<ExprId> convert_typed(const Json& schema, const std::string& type, const std::string& path,
                                 int depth) {
        if (type == "string") return convert_string(schema, path);
        if (type == "integer") return convert_numeric(schema, path, /*integer=*/true);
        if (type == "number") return convert_numeric(schema, path, /*integer=*/false);
        if (type == "boolean") return values_.boolean();
        if (type == "null") return values_.null();
        if (type == "object") return convert_object(schema, path, depth);
        return convert_array(schema, path, depth);
    }

    Result<std::optional<int64_t>> read_count(const Json& schema, const char* key,
                                              const std::string& path) const {
        if (!schema.contains(key)) return std::optional<int64_t>();
        const Json& value = schema[key];
        const bool integral =
            value.is_number_integer() ||
            (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
        if (!integral || value.get<double>() < 0)
            return error(path, "{} must be a non-negative integer", key);
        if (value.get<double>() > double(kMaxCount))
            return error(path, "{} above {} is not supported", key, kMaxCount);
        return std::optional<int64_t>(value.get<int64_t>());
    }

    Result<ExprId> convert_string(const Json& schema, const std::string& path) {
        LMRUN_ASSIGN_OR_RETURN(std::optional<int64_t> min_length, read_count(schema, "minLength", path));
        LMRUN_ASSIGN_OR_RETURN(std::optional<int64_t> max_length, read_count(schema, "maxLength", path));
        const bool has_pattern = schema.contains("pattern"), has_format = schema.contains("format");
        if (has_pattern && has_format) return error(path, "pattern together with format is not supported");
        if ((has_pattern || has_format) && (min_length || max_length)) {
            return error(path, "minLength/maxLength together with {} is not supported",
                         has_pattern ? "pattern" : "format");
        }
        const ExprId quote = grammar_.literal("\"");
        if (has_pattern) {
            if (!schema["pattern"].is_string()) return error(path, "pattern must be a string");
            auto body = add_regex(grammar_, schema["pattern"].get<std::string>(),
                                  RegexOptions{.json_string = true, .search = true});
            if (!body.ok()) return error(path, "pattern: {}", body.error().message);
            return grammar_.sequence({quote, *body, quote});
        }
        if (has_format) {
            if (!schema["format"].is_string()) return error(path, "format must be a string");
            auto body = values_.format_body(schema["format"].get<std::string>());
            if (!body.ok()) return error(path, "{}", body.error().message);
            return grammar_.sequence({quote, *body, quote});
        }
        const int64_t low = min_length.value_or(0);
        if (max_length && *max_length < low) return error(path, "maxLength is below minLength");
        return values_.string(int32_t(low), max_length ? int32_t(*max_length) : kUnbounded,
                              canonical_strings_);
    }

    // Integer bounds from minimum / maximum / exclusive*, rounded inward.
    Status read_bounds(const Json& schema, const std::string& path, std::optional<int64_t>& lo,
                       std::optional<int64_t>& hi) const {
        auto number_of = [&](const char* key, double& out) -> Status {
            const Json& value = schema[key];
            if (!value.is_number() || !std::isfinite(value.get<double>()))
                return error(path, "{} must be a number", key);
            out = value.get<double>();
            if (std::fabs(out) > double(kMaxJsonInteger))
                return error(path, "{} beyond 16 digits is not supported", key);
            return ok_status();
        };
        auto raise_lo = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
        auto lower_hi = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
        double value = 0;
        // Draft 4: exclusiveMinimum / exclusiveMaximum are booleans modifying minimum / maximum.
        const bool exclusive_min_flag = schema.contains("exclusiveMinimum") &&
                                        schema["exclusiveMinimum"].is_boolean() &&
                                        schema["exclusiveMinimum"].get<bool>();
        const bool exclusive_max_flag = schema.contains("exclusiveMaximum") &&
                                        schema["exclusiveMaximum"].is_boolean() &&
                                        schema["exclusiveMaximum"].get<bool>();
        if (schema.contains("minimum")) {
            LMRUN_RETURN_IF_ERROR(number_of("minimum", value));
            raise_lo(exclusive_min_flag ? int64_t(std::floor(value)) + 1 : int64_t(std::ceil(value)));
        }
        if (schema.contains("maximum")) {
            LMRUN_RETURN_IF_ERROR(number_of("maximum", value));
            lower_hi(exclusive_max_flag ? int64_t(std::ceil(value)) - 1 : int64_t(std::floor(value)));
        }
        if (schema.contains("exclusiveMinimum") && !schema["exclusiveMinimum"].is_boolean()) {
            LMRUN_RETURN_IF_ERROR(number_of("exclusiveMinimum", value));
            raise_lo(int64_t(std::floor(value)) + 1);
        }
        if (schema.contains("exclusiveMaximum") && !schema["exclusiveMaximum"].is_boolean()) {
            LMRUN_RETURN_IF_ERROR(number_of("exclusiveMaximum", value));
            lower_hi(int64_t(std::ceil(value)) - 1);
        }
        if (lo && hi && *lo > *hi) return error(path, "no integer lies between the minimum and the maximum");
        return ok_status();
    }

    // "integer" or "number", unbounded or within its bounds.
    Result<ExprId> convert_numeric(const Json& schema, const std::string& path, bool integer) {
        std::optional<int64_t> lo, hi;
        LMRUN_RETURN_IF_ERROR(read_bounds(schema, path, lo, hi));
        if (!lo && !hi) return integer ? values_.integer() : values_.number();
        auto range = integer ? values_.integer_range(lo, hi) : values_.number_range(lo, hi);
        if (!range.ok()) return error(path, "{}", range.error().message);
        return *range;
    }

    Result<ExprId> convert_object(const Json& schema, const std::string& path, int depth);
    Result<std::function<bool(const std::string&)>> name_checker(const Json& names, const std::string& path);
    Result<ExprId> convert_array(const Json& schema, const std::string& path, int depth);

    const Json& root_;
    Grammar grammar_;
    JsonValueGrammar values_;
    std::map<std::string, RuleId> ref_rules_;
    int64_t num_schemas_ = 0;
    int64_t num_objects_ = 0;
    bool canonical_strings_ = false;  // converting propertyNames: one spelling per key
};

// Every single byte as a token: enough to run a grammar over a known string.
std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
    static const auto vocabulary = [] {
        std::vector<std::string> bytes;
        bytes.reserve(256);
        for (int b = 0; b < 256; ++b) bytes.emplace_back(1, char(b));
        return TokenVocabulary::from_token_bytes(std::move(bytes), {});
    }();
    return vocabulary;
}

// Whether a property name satisfies the propertyNames schema (which also applies to declared properties).
Result<std::function<bool(const std::string&)>> SchemaConverter::name_checker(const Json& names,
                                                                              const std::string& path) {
    SchemaConverter converter(root_);
    const RuleId root = converter.grammar_.add_rule("root");
    LMRUN_ASSIGN_OR_RETURN(ExprId body, converter.convert(names, path, 0));
    converter.grammar_.set_body(root, body);
    converter.grammar_.set_root(root);
    LMRUN_ASSIGN_OR_RETURN(auto compiled, CompiledGrammar::compile(converter.grammar_, byte_vocabulary()));
    return std::function<bool(const std::string&)>([compiled](const std::string& name) {
        GrammarMatcher matcher(compiled);
        return matcher.accept_bytes(Json(name).dump()) && matcher.can_end();
    });
}

struct ObjectProperty {
    std::string name;
    RuleId member;  // "\"name\": " value
    bool required;
};

Result<ExprId> SchemaConverter::convert_object(const Json& schema, const std::string& path, int depth) {
    const int64_t object_id = num_objects_++;
    Grammar& g = grammar_;
    std::vector<ObjectProperty> properties;
    std::set<std::string> required;
    if (schema.contains("required")) {
        if (!schema["required"].is_array()) return error(path, "required must be an array of strings");
        for (const Json& name : schema["required"]) {
            if (!name.is_string()) return error(path, "required must be an array of strings");
            required.insert(name.get<std::string>());
        }
    }
    const bool has_properties = schema.contains("properties");
    if (has_properties && !schema["properties"].is_object())
        return error(path, "properties must be an object");
    // Extra members: a schema, or none.
    std::optional<Json> additional;
    if (schema.contains("additionalProperties")) {
        const Json& value = schema["additionalProperties"];
        if (!value.is_boolean() && !value.is_object())
            return error(path, "additionalProperties must be a boolean or a schema");
        if (value != Json(false)) additional = value;
    } else if (!has_properties) {
        additional = Json(true);
    }
    auto add_member = [&](const std::string& name, const Json& subschema,
                          const std::string& sub_path) -> Status {
        LMRUN_ASSIGN_OR_RETURN(ExprId value, convert(subschema, sub_path, depth + 1));
        const ExprId member = g.sequence({g.literal(Json(name).dump() + ": "), value});
        properties.push_back({name, g.add_rule(fmt::format("obj{}-{}", object_id, properties.size()), member),
                              required.count(name) > 0});
        return ok_status();
    };
    // propertyNames applies to every name: declared optional ones that fail it are left out.
    std::optional<Json> names;
    std::function<bool(const std::string&)> name_ok = [](const std::string&) { return true; };
    if (schema.contains("propertyNames")) {
        names = schema["propertyNames"];
        if (names->is_object() && !names->contains("type")) (*names)["type"] = "string";
        LMRUN_ASSIGN_OR_RETURN(name_ok, name_checker(*names, path + "/propertyNames"));
    }
    std::set<std::string> declared;
    std::vector<std::string> member_names;
    if (has_properties) {
        for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
            declared.insert(it.key());
            if (!name_ok(it.key())) {
                if (required.count(it.key()))
                    return error(path, "required property \"{}\" does not satisfy propertyNames", it.key());
                continue;
            }
            member_names.push_back(it.key());
            LMRUN_RETURN_IF_ERROR(
                add_member(it.key(), it.value(), path + "/properties/" + pointer_token(it.key())));
        }
    }
    for (const std::string& name : required) {
        if (declared.count(name)) continue;
        if (!additional)
            return error(path, "required property \"{}\" is not allowed (additionalProperties)", name);
        if (!name_ok(name))
            return error(path, "required property \"{}\" does not satisfy propertyNames", name);
        member_names.push_back(name);
        LMRUN_RETURN_IF_ERROR(add_member(name, *additional, path + "/additionalProperties"));
    }
    ExprId extra = -1;  // one extra member
    if (additional) {
        // Extra keys never repeat a member's name: keys are spelled canonically and the
        // members' spellings are excluded words of the key rule.
        ExprId key = values_.string(0, kUnbounded, /*canonical=*/true);
        if (names) {
            canonical_strings_ = true;
            auto converted = convert(*names, path + "/propertyNames", depth + 1);
            canonical_strings_ = false;
            if (!converted.ok()) return converted.error();
            key = *converted;
        }
        const RuleId key_rule = g.add_rule(fmt::format("obj{}-key", object_id), key);
        std::vector<std::string> spelled;
        spelled.reserve(member_names.size());
        for (const std::string& name : member_names) spelled.push_back(Json(name).dump());
        g.set_excluded_words(key_rule, std::move(spelled));
        key = g.ref(key_rule);
        LMRUN_ASSIGN_OR_RETURN(ExprId value, convert(*additional, path + "/additionalProperties", depth + 1));
        extra = g.ref(
            g.add_rule(fmt::format("obj{}-extra", object_id), g.sequence({key, g.literal(": "), value})));
    }
    const ExprId comma = g.literal(", ");
    const size_t n = properties.size();
    // after[i]: members i.. once some member was written (each needs ", ").
    std::vector<ExprId> after(n + 1);
    after[n] = extra >= 0 ? g.star(g.sequence({comma, extra})) : g.empty();
    for (size_t i = n; i-- > 0;) {
        const ExprId item = g.sequence({comma, g.ref(properties[i].member)});
        after[i] =
            g.ref(g.add_rule(fmt::format("obj{}-after-{}", object_id, i),
                             g.sequence({properties[i].required ? item : g.optional(item), after[i + 1]})));
    }
    // first[i]: members i.. with nothing written yet.
    ExprId first = extra >= 0 ? g.optional(g.sequence({extra, after[n]})) : g.empty();
    for (size_t i = n; i-- > 0;) {
        const ExprId with_member = g.sequence({g.ref(properties[i].member), after[i + 1]});
        first = properties[i].required ? with_member : g.choice({with_member, first});
        if (!properties[i].required)
            first = g.ref(g.add_rule(fmt::format("obj{}-first-{}", object_id, i), first));
    }
    return g.sequence({g.literal("{"), first, g.literal("}")});
}

Result<ExprId> SchemaConverter::convert_array(const Json& schema, const std::string& path, int depth) {
    Grammar& g = grammar_;
    std::vector<ExprId> prefix;
    const Json* prefix_items = schema.contains("prefixItems") ? &schema["prefixItems"] : nullptr;
    if (schema.contains("items") && schema["items"].is_array())
        prefix_items = &schema["items"];  // draft 4 tuples
    if (prefix_items) {
        if (!prefix_items->is_array()) return error(path, "prefixItems must be an array");
        for (size_t i = 0; i < prefix_items->size(); ++i) {
            LMRUN_ASSIGN_OR_RETURN(
                ExprId item,
                convert((*prefix_items)[i], fmt::format("{}/prefixItems/{}", path, i), depth + 1));
            prefix.push_back(g.ref(g.add_rule("prefix-item", item)));
        }
    }
    LMRUN_ASSIGN_OR_RETURN(std::optional<int64_t> min_items, read_count(schema, "minItems", path));
    LMRUN_ASSIGN_OR_RETURN(std::optional<int64_t> max_items, read_count(schema, "maxItems", path));
    const int64_t k = int64_t(prefix.size());
    int64_t low = min_items.value_or(0);
    int64_t high = max_items.value_or(-1);  // -1: unbounded
    ExprId item = -1;
    // "items": false, or a draft-4 tuple (an array of schemas) without additionalItems: no more
    // items than the prefix.
    const bool items_closed =
        schema.contains("items") && (schema["items"] == Json(false) || schema["items"].is_array());
    if (items_closed) {
        high = high < 0 ? k : std::min(high, k);
    } else {
        const Json items = schema.contains("items") ? schema["items"] : Json(true);
        LMRUN_ASSIGN_OR_RETURN(ExprId converted, convert(items, path + "/items", depth + 1));
        item = g.ref(g.add_rule("item", converted));
    }
    if (high >= 0 && high < low) return error(path, "maxItems is below minItems (or the items allowed)");
    const ExprId comma = g.literal(", ");
    // Items beyond the prefix: between rest_low and rest_high of them (-1 = unbounded).
    ExprId tail = g.empty();
    const int64_t rest_low = std::max<int64_t>(0, low - k);
    const int64_t rest_high = high < 0 ? -1 : std::max<int64_t>(0, high - k);
    if (item >= 0 && rest_high != 0) {
        auto repeat = [&](ExprId x, int64_t lo, int64_t hi) {
            return g.repeat(x, int32_t(std::max<int64_t>(lo, 0)), hi < 0 ? kUnbounded : int32_t(hi));
        };
        const ExprId more = g.sequence({comma, item});
        if (k == 0) {
            const ExprId list =
                g.sequence({item, repeat(more, rest_low - 1, rest_high < 0 ? -1 : rest_high - 1)});
            tail = rest_low == 0 ? g.optional(list) : list;
        } else {
            tail = repeat(more, rest_low, rest_high);
        }
    }
    // Prefix items, each optional from index `low` on (and none past `high`).
    for (int64_t i = std::min<int64_t>(k, high < 0 ? k : high); i-- > 0;) {
        const ExprId node = g.sequence({i == 0 ? g.empty() : comma, prefix[size_t(i)], tail});
        tail = i < low ? node : g.optional(node);
    }
    return g.sequence({g.literal("["), tail, g.literal("]")});
}

}  // namespace

Result<Grammar> grammar_from_json_schema(const nlohmann::ordered_json& schema) {
    SchemaConverter converter(schema);
    return converter.run();
}

Grammar json_object_grammar() {
    Grammar grammar;
    JsonValueGrammar values(grammar);
    grammar.set_root(grammar.add_rule("root", values.any_object()));
    return grammar;
}

}  // namespace lmrun::structured
