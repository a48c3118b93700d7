#include "structured/json_value_grammar.h"

#include "structured/regex_converter.h"

namespace lmrun::structured {
namespace {

constexpr int32_t kMaxIntegerDigits = 16;
constexpr int32_t kMaxFractionDigits = 15;

std::string pow10_minus_one(size_t digits) {
    return std::string(digits, '9');
}

}  // namespace

ExprId JsonValueGrammar::string_char() {
    if (char_rule_ < 0) {
        Grammar& g = grammar_;
        const ExprId raw = g.char_class({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, /*negated=*/true);
        const ExprId hex = g.char_class({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
        // \uXXXX without surrogates (D800-DFFF): each escape is one character.
        const ExprId not_d = g.char_class({{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}});
        const ExprId unicode_escape =
            g.sequence({g.literal("u"), g.choice({g.sequence({not_d, hex, hex, hex}),
                                                  g.sequence({g.char_class({{'d', 'd'}, {'D', 'D'}}),
                                                              g.char_class({{'0', '7'}}), hex, hex})})});
        const ExprId escape = g.sequence({g.literal("\\"), g.choice({g.char_class({{'"', '"'},
                                                                                   {'\\', '\\'},
                                                                                   {'/', '/'},
                                                                                   {'b', 'b'},
                                                                                   {'f', 'f'},
                                                                                   {'n', 'n'},
                                                                                   {'r', 'r'},
                                                                                   {'t', 't'}}),
                                                                     unicode_escape})});
        char_rule_ = g.add_rule("json-char", g.choice({raw, escape}));
    }
    return grammar_.ref(char_rule_);
}

ExprId JsonValueGrammar::string(int32_t min_length, int32_t max_length, bool canonical) {
    const ExprId one = canonical ? json_string_chars(grammar_, complement_ranges({})) : string_char();
    return grammar_.sequence(
        {grammar_.literal("\""), grammar_.repeat(one, min_length, max_length), grammar_.literal("\"")});
}

ExprId JsonValueGrammar::digits(int32_t min_count, int32_t max_count) {
    return grammar_.repeat(grammar_.char_class({{'0', '9'}}), min_count, max_count);
}

ExprId JsonValueGrammar::integer() {
    Grammar& g = grammar_;
    const ExprId magnitude = g.choice(
        {g.literal("0"), g.sequence({g.char_class({{'1', '9'}}), digits(0, kMaxIntegerDigits - 1)})});
    return g.sequence({g.optional(g.literal("-")), magnitude});
}

ExprId JsonValueGrammar::fraction() {
    return grammar_.sequence({grammar_.literal("."), digits(1, kMaxFractionDigits)});
}

ExprId JsonValueGrammar::number() {
    Grammar& g = grammar_;
    const ExprId exponent = g.sequence({g.char_class({{'e', 'e'}, {'E', 'E'}}),
                                        g.optional(g.char_class({{'+', '+'}, {'-', '-'}})), digits(1, 2)});
    return g.sequence({integer(), g.optional(fraction()), g.optional(exponent)});
}

ExprId JsonValueGrammar::boolean() {
    return grammar_.choice({grammar_.literal("true"), grammar_.literal("false")});
}

ExprId JsonValueGrammar::null() {
    return grammar_.literal("null");
}

ExprId JsonValueGrammar::any_value() {
    if (value_rule_ < 0) {
        Grammar& g = grammar_;
        value_rule_ = g.add_rule("json-value");
        object_rule_ = g.add_rule("json-object");
        array_rule_ = g.add_rule("json-array");
        const ExprId value = g.ref(value_rule_);
        const ExprId member = g.sequence({string(), g.literal(": "), value});
        g.set_body(
            object_rule_,
            g.sequence({g.literal("{"),
                        g.optional(g.sequence({member, g.star(g.sequence({g.literal(", "), member}))})),
                        g.literal("}")}));
        g.set_body(array_rule_,
                   g.sequence({g.literal("["),
                               g.optional(g.sequence({value, g.star(g.sequence({g.literal(", "), value}))})),
                               g.literal("]")}));
        g.set_body(value_rule_, g.choice({g.ref(object_rule_), g.ref(array_rule_), string(), number(),
                                          boolean(), null()}));
    }
    return grammar_.ref(value_rule_);
}

ExprId JsonValueGrammar::any_object() {
    any_value();
    return grammar_.ref(object_rule_);
}

// Equal-length decimal strings lo <= hi.
ExprId JsonValueGrammar::same_length_range(const std::string& lo, const std::string& hi) {
    Grammar& g = grammar_;
    const size_t n = lo.size();
    if (n == 1) return g.char_class({{char32_t(lo[0]), char32_t(hi[0])}});
    if (lo[0] == hi[0])
        return g.sequence({g.literal(lo.substr(0, 1)), same_length_range(lo.substr(1), hi.substr(1))});
    std::vector<ExprId> alternatives;
    const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
    char middle_first = lo[0], middle_last = hi[0];
    if (lo_rest != std::string(n - 1, '0')) {
        alternatives.push_back(
            g.sequence({g.literal(lo.substr(0, 1)), same_length_range(lo_rest, pow10_minus_one(n - 1))}));
        ++middle_first;
    }
    ExprId tail = -1;
    if (hi_rest != pow10_minus_one(n - 1)) {
        tail = g.sequence({g.literal(hi.substr(0, 1)), same_length_range(std::string(n - 1, '0'), hi_rest)});
        --middle_last;
    }
    if (middle_first <= middle_last) {
        alternatives.push_back(g.sequence({g.char_class({{char32_t(middle_first), char32_t(middle_last)}}),
                                           digits(int32_t(n - 1), int32_t(n - 1))}));
    }
    if (tail >= 0) alternatives.push_back(tail);
    return g.choice(std::move(alternatives));
}

// Decimal strings (no leading zeros) of the integers in [lo, hi].
ExprId JsonValueGrammar::nonneg_range(uint64_t lo, uint64_t hi) {
    std::vector<ExprId> alternatives;
    std::string a = std::to_string(lo);
    const std::string b = std::to_string(hi);
    while (a.size() < b.size()) {
        alternatives.push_back(same_length_range(a, pow10_minus_one(a.size())));
        a.assign(a.size() + 1, '0');  // the next power of ten
        a[0] = '1';
    }
    alternatives.push_back(same_length_range(a, b));
    return grammar_.choice(std::move(alternatives));
}

Result<ExprId> JsonValueGrammar::integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    const int64_t low = lo.value_or(-kMaxJsonInteger);
    const int64_t high = hi.value_or(kMaxJsonInteger);
    if (low < -kMaxJsonInteger || high > kMaxJsonInteger)
        return make_error("integer bounds beyond 16 digits are not supported");
    if (low > high) return make_error("the minimum {} is above the maximum {}", low, high);
    Grammar& g = grammar_;
    if (low >= 0) return nonneg_range(uint64_t(low), uint64_t(high));
    const ExprId negative =
        g.sequence({g.literal("-"), nonneg_range(uint64_t(std::max<int64_t>(-high, 1)), uint64_t(-low))});
    if (high < 0) return negative;
    return g.choice({negative, nonneg_range(0, uint64_t(high))});
}

// [lo, hi] as numbers: integers in range; "i.f" for i in [max(lo, 0), hi - 1]
// (its value lies in [i, i + 1)); "-k.f" for k in [max(-hi, 0), -lo - 1] (value in (-k - 1, -k]).
Result<ExprId> JsonValueGrammar::number_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    const int64_t low = lo.value_or(-kMaxJsonInteger);
    const int64_t high = hi.value_or(kMaxJsonInteger);
    LMRUN_ASSIGN_OR_RETURN(ExprId integers, integer_range(low, high));
    Grammar& g = grammar_;
    std::vector<ExprId> alternatives{integers};
    if (std::max<int64_t>(low, 0) <= high - 1)
        alternatives.push_back(
            g.sequence({nonneg_range(uint64_t(std::max<int64_t>(low, 0)), uint64_t(high - 1)), fraction()}));
    if (std::max<int64_t>(-high, 0) <= -low - 1) {
        alternatives.push_back(g.sequence(
            {g.literal("-"), nonneg_range(uint64_t(std::max<int64_t>(-high, 0)), uint64_t(-low - 1)),
             fraction()}));
    }
    return g.choice(std::move(alternatives));
}

Result<ExprId> JsonValueGrammar::format_body(const std::string& format) {
    auto regex = [&](const char* pattern) { return add_regex(grammar_, pattern); };
    // Feb 29 is left out: valid only in leap years, and a date must always validate.
    const char* date =
        "[1-9][0-9]{3}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-"
        "9]|1[0-9]|2[0-8]))";
    const char* time =
        "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
    if (format == "date") return regex(date);
    if (format == "time") return regex(time);
    if (format == "date-time") return regex((std::string(date) + "T" + time).c_str());
    if (format == "uuid")
        return regex("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    if (format == "email") {
        return regex(
            "[A-Za-z0-9_%+-]{1,20}(\\.[A-Za-z0-9_%+-]{1,20}){0,2}@([A-Za-z0-9]([A-Za-z0-9-]{0,20}[A-Za-z0-9])"
            "?\\.){1,3}[A-Za-z]{2,10}");
    }
    return make_error("unsupported string format \"{}\" (supported: date, time, date-time, uuid, email)",
                      format);
}

std::string JsonValueGrammar::dump(const nlohmann::ordered_json& value) {
    if (value.is_object()) {
        std::string out = "{";
        for (auto it = value.begin(); it != value.end(); ++it) {
            if (out.size() > 1) out += ", ";
            out += nlohmann::ordered_json(it.key()).dump() + ": " + dump(it.value());
        }
        return out + "}";
    }
    if (value.is_array()) {
        std::string out = "[";
        for (const auto& item : value) {
            if (out.size() > 1) out += ", ";
            out += dump(item);
        }
        return out + "]";
    }
    return value.dump();
}

ExprId JsonValueGrammar::literal_value(const nlohmann::ordered_json& value) {
    return grammar_.literal(dump(value));
}

}  // namespace lmrun::structured
