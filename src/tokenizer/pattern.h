// The `pattern` field of tokenizer.json Split / Replace components: either
// {"String": literal} or {"Regex": oniguruma-style pattern}. Finds byte ranges of
// non-overlapping matches and does replace-all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "tokenizer/regex.h"

namespace lmrun {

class Pattern {
  public:
    static Result<Pattern> from_json(const nlohmann::json& spec);
    static Pattern literal(std::string text);

    std::vector<ByteRange> find_all(std::string_view text) const;
    std::string replace_all(std::string_view text, std::string_view content) const;

  private:
    bool is_regex_ = false;
    std::string literal_;
    Regex regex_;
};

}  // namespace lmrun
