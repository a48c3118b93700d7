#include "tokenizer/normalizer.h"

#include <nlohmann/json.hpp>

#include "tokenizer/component_steps.h"

namespace lmrun {

namespace {

std::string strip_whitespace(std::string_view text, bool left, bool right) {
    size_t begin = 0;
    size_t end = text.size();
    if (left) {
        size_t pos = 0;
        while (pos < text.size()) {
            size_t next = pos;
            if (!unicode::is_whitespace(unicode::next_code_point(text, next))) break;
            pos = next;
        }
        begin = pos;
    }
    if (right) {
        // Walk back code point by code point over trailing whitespace.
        while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
            size_t pos = start;
            if (!unicode::is_whitespace(unicode::next_code_point(text, pos))) break;
            end = start;
        }
    }
    return std::string(text.substr(begin, end - begin));
}

}  // namespace

Result<Normalizer> Normalizer::from_json(const nlohmann::json& spec) {
    Normalizer normalizer;
    if (!spec.is_null()) {
        LMRUN_RETURN_IF_ERROR(
            append_component_steps(spec, "normalizer", "normalizers", normalizer.steps_, read_step));
    }
    return normalizer;
}

Result<Normalizer::Step> Normalizer::read_step(const std::string& type, const nlohmann::json& spec) {
    Step step;
    if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
        step.kind = Kind::Unicode;
        step.form = type == "NFC"    ? unicode::NormalForm::Nfc
                    : type == "NFD"  ? unicode::NormalForm::Nfd
                    : type == "NFKC" ? unicode::NormalForm::Nfkc
                                     : unicode::NormalForm::Nfkd;
    } else if (type == "Prepend") {
        step.kind = Kind::Prepend;
        step.text = spec.at("prepend").get<std::string>();
    } else if (type == "Replace") {
        step.kind = Kind::Replace;
        step.text = spec.at("content").get<std::string>();
        LMRUN_ASSIGN_OR_RETURN(step.pattern, Pattern::from_json(spec.at("pattern")));
    } else if (type == "Lowercase") {
        step.kind = Kind::Lowercase;
    } else if (type == "Strip") {
        step.kind = Kind::Strip;
        step.strip_left = spec.value("strip_left", true);
        step.strip_right = spec.value("strip_right", true);
    } else {
        return make_error(ErrorKind::Unsupported, "unsupported normalizer type '{}'", type);
    }
    return step;
}

std::string Normalizer::apply(const Step& step, std::string text) {
    switch (step.kind) {
        case Kind::Unicode:
            return unicode::normalize(text, step.form);
        case Kind::Prepend:
            return text.empty() ? text : step.text + text;
        case Kind::Replace:
            return step.pattern.replace_all(text, step.text);
        case Kind::Lowercase:
            return unicode::to_lowercase(text);
        case Kind::Strip:
            return strip_whitespace(text, step.strip_left, step.strip_right);
    }
    return text;
}

std::string Normalizer::normalize(std::string_view text) const {
    std::string out(text);
    for (const Step& step : steps_) out = apply(step, std::move(out));
    return out;
}

}  // namespace lmrun
