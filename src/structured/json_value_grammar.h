// Grammar pieces for JSON text, shared by the JSON Schema converter and the
// json_object constraint. Output is JSON as Python's json.dumps writes it by
// default: ", " between items and ": " after keys, no other whitespace, so a
// constrained output has one spelling and always ends.
//
// Strings: raw characters except '"', '\' and controls, or the escapes \" \\ \/
// \b \f \n \r \t \uXXXX (never a surrogate, so every escape is one character and
// minLength / maxLength count what a validator counts). Numbers: at most 16
// integer digits, 15 fraction digits and a 2-digit exponent (llama.cpp bounds
// them the same way): a random walk through a number always ends.
// Integer ranges are exact (decimal digit-range construction).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "structured/grammar.h"

namespace lmrun::structured {

inline constexpr int64_t kMaxJsonInteger = 9'999'999'999'999'999;  // 16 digits

class JsonValueGrammar {
  public:
    explicit JsonValueGrammar(Grammar& grammar) : grammar_(grammar) {}

    // One character of a JSON string body (raw or escaped).
    ExprId string_char();
    // "\"" char{min,max} "\"" (max = kUnbounded for no limit). `canonical`: each
    // character spelled one way only (raw, or the one escape JSON requires), so that
    // a string value has a single spelling (object keys, see Rule::excluded_words).
    ExprId string(int32_t min_length = 0, int32_t max_length = kUnbounded, bool canonical = false);
    ExprId integer();
    ExprId number();
    ExprId boolean();
    ExprId null();
    // Any JSON value / any object (recursive rules, created once).
    ExprId any_value();
    ExprId any_object();

    // Decimal integers in [lo, hi] (open sides: the 16-digit limit).
    Result<ExprId> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);
    // Numbers in [lo, hi] with optional fraction, no exponent.
    Result<ExprId> number_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

    // The body (between the quotes) of a string with this "format": date, time,
    // date-time, uuid, email. Error for any other format.
    Result<ExprId> format_body(const std::string& format);

    // A literal JSON value in this grammar's spelling (enum and const).
    ExprId literal_value(const nlohmann::ordered_json& value);
    static std::string dump(const nlohmann::ordered_json& value);

    Grammar& grammar() { return grammar_; }

  private:
    ExprId digits(int32_t min_count, int32_t max_count);
    ExprId nonneg_range(uint64_t lo, uint64_t hi);
    ExprId same_length_range(const std::string& lo, const std::string& hi);
    ExprId fraction();

    Grammar& grammar_;
    RuleId char_rule_ = -1;
    RuleId value_rule_ = -1;
    RuleId object_rule_ = -1;
    RuleId array_rule_ = -1;
};

}  // namespace lmrun::structured
