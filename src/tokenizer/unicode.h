// UTF-8 helpers for the tokenizer: code point iteration, lossy decoding with the
// same replacement rules as Rust's String::from_utf8_lossy (one U+FFFD per maximal
// ill-formed subpart), Unicode predicates as Rust's char methods define them, and
// ICU-backed normalization forms. All strings are UTF-8 byte strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lmrun::unicode {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence starting at text[pos], or 0 if the
// bytes there are not a complete well-formed sequence.
size_t valid_sequence_length(std::string_view text, size_t pos);
bool is_valid_utf8(std::string_view text);
// Replaces every maximal ill-formed subpart by U+FFFD (Rust from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);

// Decodes the code point at text[pos] (text must be valid UTF-8); advances pos.
char32_t next_code_point(std::string_view text, size_t& pos);
void append_utf8(std::string& out, char32_t code_point);

// Rust char::is_whitespace (Unicode White_Space).
bool is_whitespace(char32_t code_point);
// Rust char::is_alphanumeric (Alphabetic or Numeric).
bool is_alphanumeric(char32_t code_point);

enum class NormalForm { Nfc, Nfd, Nfkc, Nfkd };
// text must be valid UTF-8.
std::string normalize(std::string_view text, NormalForm form);
// Rust str::to_lowercase (full case mapping).
std::string to_lowercase(std::string_view text);

}  // namespace lmrun::unicode
