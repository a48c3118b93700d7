// PCRE2-backed regular expressions for tokenizer.json patterns (written for the
// Oniguruma engine Hugging Face uses). Patterns are compiled with UTF + UCP, and
// `\s`/`\S` are rewritten to the Unicode White_Space set that Oniguruma uses
// (PCRE2's own \s omits U+0085). Matches are byte ranges into UTF-8 text.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace lmrun {

struct ByteRange {
    size_t begin = 0;
    size_t end = 0;
};

class Regex {
  public:
    static Result<Regex> compile(std::string_view pattern);
    // Every non-overlapping match, left to right. `text` must be valid UTF-8.
    std::vector<ByteRange> find_all(std::string_view text) const;

  private:
    struct Compiled;
    std::shared_ptr<const Compiled> compiled_;
};

// Escapes every regex metacharacter so that `literal` matches only itself.
std::string regex_escape(std::string_view literal);
// The pattern PCRE2 compiles for an Oniguruma-style `pattern` (exposed for tests).
std::string translate_whitespace_classes(std::string_view pattern);

}  // namespace lmrun
