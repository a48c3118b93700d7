#include "tokenizer/pattern.h"

#include <nlohmann/json.hpp>

namespace lmrun {

Result<Pattern> Pattern::from_json(const nlohmann::json& spec) {
    if (spec.is_object() && spec.contains("String") && spec["String"].is_string()) {
        return literal(spec["String"].get<std::string>());
    }
    if (spec.is_object() && spec.contains("Regex") && spec["Regex"].is_string()) {
        Pattern pattern;
        pattern.is_regex_ = true;
        LMRUN_ASSIGN_OR_RETURN(pattern.regex_, Regex::compile(spec["Regex"].get<std::string>()));
        return pattern;
    }
    return make_error("pattern must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", spec.dump());
}

Pattern Pattern::literal(std::string text) {
    Pattern pattern;
    pattern.literal_ = std::move(text);
    return pattern;
}

std::vector<ByteRange> Pattern::find_all(std::string_view text) const {
    if (is_regex_) return regex_.find_all(text);
    std::vector<ByteRange> matches;
    if (literal_.empty()) return matches;
    size_t pos = text.find(literal_);
    while (pos != std::string_view::npos) {
        matches.push_back({pos, pos + literal_.size()});
        pos = text.find(literal_, pos + literal_.size());
    }
    return matches;
}

std::string Pattern::replace_all(std::string_view text, std::string_view content) const {
    std::string out;
    size_t copied = 0;
    for (const ByteRange& match : find_all(text)) {
        out.append(text.substr(copied, match.begin - copied));
        out.append(content);
        copied = match.end;
    }
    out.append(text.substr(copied));
    return out;
}

}  // namespace lmrun
