// UTF-8 string helpers with Python str semantics for the Jinja interpreter:
// Python strings are sequences of code points, so lengths, indices and slices
// count code points, and strip()/split() use Python's notion of whitespace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace lmrun::jinja {

// Byte offsets of every code point start plus a final entry == text.size().
// Invalid bytes count as one code point each (never fails). The scans below spend their
// input's bytes from the current render budget.
std::vector<size_t> code_point_offsets(std::string_view text);
size_t code_point_count(std::string_view text);

// Python str.isspace() for one code point; decode_utf8 returns the code point at
// `pos` and advances it (invalid bytes decode to themselves).
bool is_python_space(uint32_t cp);
uint32_t decode_utf8(std::string_view text, size_t& pos);
void append_utf8(std::string& out, uint32_t cp);

// Python str.strip/lstrip/rstrip: `chars` empty means whitespace.
enum class StripSide { Left, Right, Both };
std::string python_strip(std::string_view text, StripSide side, std::string_view chars, bool chars_given);

// Python str.split(sep, maxsplit): sep empty means split on whitespace runs. Fails past
// kMaxListItems pieces (render_budget.h).
Result<std::vector<std::string>> python_split(std::string_view text, std::string_view sep, bool sep_given,
                                              int64_t max_split);

// Python str.replace; fails when the result would exceed kMaxValueBytes.
Result<std::string> replace_all(std::string_view text, std::string_view from, std::string_view to,
                                int64_t max_count);

// Full Unicode case mapping (ICU, root locale), like Python's str.upper()/lower().
std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);
// Python str.capitalize(): first code point upper case, the rest lower case.
std::string capitalize(std::string_view text);
// Jinja's |title: words start after whitespace, '-', or opening brackets.
std::string title_case(std::string_view text);

}  // namespace lmrun::jinja
