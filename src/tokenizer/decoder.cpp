#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/component_steps.h"
#include "tokenizer/unicode.h"

namespace lmrun {

namespace {

std::vector<std::string> decode_byte_level(const std::vector<std::string>& tokens) {
    std::string bytes;
    for (const std::string& token : tokens) {
        const size_t token_start = bytes.size();
        bool all_mapped = true;
        for (size_t pos = 0; pos < token.size();) {
            const auto byte = byte_level::char_to_byte(unicode::next_code_point(token, pos));
            if (!byte) {
                all_mapped = false;
                break;
            }
            bytes.push_back(static_cast<char>(*byte));
        }
        // A token with any character outside the alphabet (an added token such
        // as "<|im_end|>" is fine, "é" is not) contributes its UTF-8 bytes as-is.
        if (!all_mapped) bytes.replace(token_start, std::string::npos, token);
    }
    return {unicode::utf8_lossy(bytes)};
}

// "<0xNN>" -> the byte NN.
std::optional<unsigned char> parse_byte_token(const std::string& token) {
    if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
    unsigned value = 0;
    for (size_t i = 3; i < 5; ++i) {
        const char c = token[i];
        value <<= 4;
        if (c >= '0' && c <= '9')
            value |= c - '0';
        else if (c >= 'a' && c <= 'f')
            value |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            value |= c - 'A' + 10;
        else
            return std::nullopt;
    }
    return static_cast<unsigned char>(value);
}

std::vector<std::string> decode_byte_fallback(std::vector<std::string> tokens) {
    std::vector<std::string> out;
    std::string pending_bytes;
    auto flush = [&]() {
        if (pending_bytes.empty()) return;
        // A run that is not valid UTF-8 as a whole gives one U+FFFD per byte.
        if (unicode::is_valid_utf8(pending_bytes)) {
            out.push_back(pending_bytes);
        } else {
            for (size_t i = 0; i < pending_bytes.size(); ++i) out.emplace_back(unicode::kReplacementChar);
        }
        pending_bytes.clear();
    };
    for (std::string& token : tokens) {
        if (const auto byte = parse_byte_token(token)) {
            pending_bytes.push_back(static_cast<char>(*byte));
            continue;
        }
        flush();
        out.push_back(std::move(token));
    }
    flush();
    return out;
}

std::string strip_chars(const std::string& token, const std::string& content, size_t start, size_t stop) {
    size_t begin = 0;
    size_t end = token.size();
    for (size_t i = 0; i < start && token.compare(begin, content.size(), content) == 0 && begin < end; ++i) {
        begin += content.size();
    }
    for (size_t i = 0; i < stop && end >= begin + content.size() &&
                       token.compare(end - content.size(), content.size(), content) == 0;
         ++i) {
        end -= content.size();
    }
    return token.substr(begin, end - begin);
}

}  // namespace

Result<Decoder> Decoder::from_json(const nlohmann::json& spec) {
    Decoder decoder;
    if (spec.is_null()) return decoder;
    decoder.has_decoder_ = true;
    LMRUN_RETURN_IF_ERROR(append_component_steps(spec, "decoder", "decoders", decoder.steps_, read_step));
    for (const Step& step : decoder.steps_) decoder.has_byte_fallback_ |= step.kind == Kind::ByteFallback;
    return decoder;
}

Result<Decoder::Step> Decoder::read_step(const std::string& type, const nlohmann::json& spec) {
    Step step;
    if (type == "ByteLevel") {
        step.kind = Kind::ByteLevel;
    } else if (type == "ByteFallback") {
        step.kind = Kind::ByteFallback;
    } else if (type == "Fuse") {
        step.kind = Kind::Fuse;
    } else if (type == "Strip") {
        step.kind = Kind::Strip;
        step.content = spec.at("content").get<std::string>();
        step.strip_start = spec.value("start", size_t{0});
        step.strip_stop = spec.value("stop", size_t{0});
    } else if (type == "Replace") {
        step.kind = Kind::Replace;
        step.content = spec.at("content").get<std::string>();
        LMRUN_ASSIGN_OR_RETURN(step.pattern, Pattern::from_json(spec.at("pattern")));
    } else if (type == "Metaspace") {
        step.kind = Kind::Metaspace;
        step.content = spec.value("replacement", std::string("\xE2\x96\x81"));
        const std::string scheme = spec.value("prepend_scheme", std::string("always"));
        step.metaspace_strip_first = scheme != "never" && spec.value("add_prefix_space", true);
    } else {
        return make_error(ErrorKind::Unsupported, "unsupported decoder type '{}'", type);
    }
    return step;
}

std::vector<std::string> Decoder::apply(const Step& step, std::vector<std::string> tokens, bool at_start) {
    switch (step.kind) {
        case Kind::ByteLevel:
            return decode_byte_level(tokens);
        case Kind::ByteFallback:
            return decode_byte_fallback(std::move(tokens));
        case Kind::Fuse: {
            std::string fused;
            for (const std::string& token : tokens) fused += token;
            return {fused};
        }
        case Kind::Strip:
            for (std::string& token : tokens) {
                token = strip_chars(token, step.content, at_start ? step.strip_start : 0, step.strip_stop);
            }
            return tokens;
        case Kind::Replace:
            for (std::string& token : tokens) token = step.pattern.replace_all(token, step.content);
            return tokens;
        case Kind::Metaspace: {
            const Pattern replacement = Pattern::literal(step.content);
            for (size_t i = 0; i < tokens.size(); ++i) {
                // As HF: in the first token every replacement char is dropped, not only a leading one.
                const bool drop = i == 0 && at_start && step.metaspace_strip_first;
                tokens[i] = replacement.replace_all(tokens[i], drop ? "" : " ");
            }
            return tokens;
        }
    }
    return tokens;
}

bool Decoder::is_fallback_byte(const std::string& token) const {
    return has_byte_fallback_ && parse_byte_token(token).has_value();
}

std::string Decoder::decode(std::vector<std::string> tokens, bool at_sequence_start) const {
    if (!has_decoder_) {
        std::string joined;
        for (size_t i = 0; i < tokens.size(); ++i) joined += (i > 0 ? " " : "") + tokens[i];
        return joined;
    }
    for (const Step& step : steps_) tokens = apply(step, std::move(tokens), at_sequence_start);
    std::string text;
    for (const std::string& token : tokens) text += token;
    return text;
}

}  // namespace lmrun
