#include "tokenizer/byte_level.h"

#include "tokenizer/unicode.h"

namespace lmrun::byte_level {

namespace {

bool maps_to_itself(int byte) {
    return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

// byte -> code point, the table GPT-2 published with its encoder.
std::array<char32_t, 256> build_code_points() {
    std::array<char32_t, 256> code_points{};
    char32_t next_extra = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
        code_points[byte] = maps_to_itself(byte) ? static_cast<char32_t>(byte) : next_extra++;
    }
    return code_points;
}

const std::array<char32_t, 256>& code_points() {
    static const std::array<char32_t, 256> table = build_code_points();
    return table;
}

}  // namespace

const std::array<std::string, 256>& byte_to_char_table() {
    static const std::array<std::string, 256> table = [] {
        std::array<std::string, 256> strings;
        for (int byte = 0; byte < 256; ++byte) unicode::append_utf8(strings[byte], code_points()[byte]);
        return strings;
    }();
    return table;
}

void append_encoded(std::string& out, std::string_view bytes) {
    const auto& table = byte_to_char_table();
    for (char c : bytes) out.append(table[static_cast<unsigned char>(c)]);
}

std::optional<unsigned char> char_to_byte(char32_t code_point) {
    // All mapped code points are below U+0144 (0x100 + 68 remapped bytes).
    static const std::array<int, 0x144> reverse = [] {
        std::array<int, 0x144> table;
        table.fill(-1);
        for (int byte = 0; byte < 256; ++byte) table[code_points()[byte]] = byte;
        return table;
    }();
    if (code_point >= reverse.size() || reverse[code_point] < 0) return std::nullopt;
    return static_cast<unsigned char>(reverse[code_point]);
}

}  // namespace lmrun::byte_level
