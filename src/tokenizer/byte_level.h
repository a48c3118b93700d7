// GPT-2 byte-level alphabet: each of the 256 byte values maps to one printable
// code point (printable Latin-1 bytes map to themselves, the rest to U+0100 and
// up), so any byte string becomes a string of visible characters and back.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace lmrun::byte_level {

// UTF-8 encoding of the code point that stands for each byte.
const std::array<std::string, 256>& byte_to_char_table();
// Appends the byte-level characters of every byte of `bytes`.
void append_encoded(std::string& out, std::string_view bytes);
// The byte a byte-level code point stands for, or nothing for other code points.
std::optional<unsigned char> char_to_byte(char32_t code_point);

}  // namespace lmrun::byte_level
