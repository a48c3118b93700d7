#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/component_steps.h"

namespace lmrun {

namespace {

// GPT-2's pre-tokenization regex, used by ByteLevel when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Segment {
    size_t begin;
    size_t end;
    bool is_match;
};

// Matches and the gaps between them, covering all of `text`, in order.
std::vector<Segment> segments_of(std::string_view text, const Pattern& pattern, bool invert) {
    std::vector<Segment> segments;
    size_t previous_end = 0;
    for (const ByteRange& match : pattern.find_all(text)) {
        if (match.begin > previous_end) segments.push_back({previous_end, match.begin, invert});
        segments.push_back({match.begin, match.end, !invert});
        previous_end = match.end;
    }
    if (previous_end < text.size()) segments.push_back({previous_end, text.size(), invert});
    return segments;
}

std::vector<Segment> merge_segments(std::vector<Segment> segments, SplitBehavior behavior) {
    std::vector<Segment> out;
    bool previous_match = false;
    switch (behavior) {
        case SplitBehavior::Isolated:
            return segments;
        case SplitBehavior::Removed:
            for (const Segment& s : segments) {
                if (!s.is_match) out.push_back(s);
            }
            return out;
        case SplitBehavior::MergedWithPrevious:
            for (const Segment& s : segments) {
                if (s.is_match && !previous_match && !out.empty()) {
                    out.back().end = s.end;
                } else {
                    out.push_back(s);
                }
                previous_match = s.is_match;
            }
            return out;
        case SplitBehavior::MergedWithNext:
            for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
                if (it->is_match && !previous_match && !out.empty()) {
                    out.back().begin = it->begin;
                } else {
                    out.push_back(*it);
                }
                previous_match = it->is_match;
            }
            return {out.rbegin(), out.rend()};
        case SplitBehavior::Contiguous:
            for (const Segment& s : segments) {
                if (!out.empty() && s.is_match == previous_match) {
                    out.back().end = s.end;
                } else {
                    out.push_back(s);
                }
                previous_match = s.is_match;
            }
            return out;
    }
    return segments;
}

Result<SplitBehavior> parse_behavior(const std::string& name) {
    if (name == "Removed") return SplitBehavior::Removed;
    if (name == "Isolated") return SplitBehavior::Isolated;
    if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (name == "Contiguous") return SplitBehavior::Contiguous;
    return make_error(ErrorKind::Unsupported, "unsupported Split behavior '{}'", name);
}

}  // namespace

std::vector<std::string> split_text(std::string_view text, const Pattern& pattern, SplitBehavior behavior,
                                    bool invert) {
    std::vector<std::string> pieces;
    for (const Segment& s : merge_segments(segments_of(text, pattern, invert), behavior)) {
        if (s.end > s.begin) pieces.emplace_back(text.substr(s.begin, s.end - s.begin));
    }
    return pieces;
}

Result<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& spec) {
    PreTokenizer pre_tokenizer;
    if (!spec.is_null()) {
        LMRUN_RETURN_IF_ERROR(
            append_component_steps(spec, "pre_tokenizer", "pretokenizers", pre_tokenizer.steps_, read_step));
    }
    return pre_tokenizer;
}

Result<PreTokenizer::Step> PreTokenizer::read_step(const std::string& type, const nlohmann::json& spec) {
    Step step;
    if (type == "Split") {
        step.kind = Kind::Split;
        LMRUN_ASSIGN_OR_RETURN(step.pattern, Pattern::from_json(spec.at("pattern")));
        LMRUN_ASSIGN_OR_RETURN(step.behavior, parse_behavior(spec.at("behavior").get<std::string>()));
        step.invert = spec.value("invert", false);
    } else if (type == "ByteLevel") {
        step.kind = Kind::ByteLevel;
        step.add_prefix_space = spec.value("add_prefix_space", true);
        step.use_regex = spec.value("use_regex", true);
        if (step.use_regex) {
            LMRUN_ASSIGN_OR_RETURN(step.pattern, Pattern::from_json({{"Regex", std::string(kGpt2Pattern)}}));
        }
    } else if (type == "Metaspace") {
        LMRUN_ASSIGN_OR_RETURN(step, parse_metaspace(spec));
    } else {
        return make_error(ErrorKind::Unsupported, "unsupported pre_tokenizer type '{}'", type);
    }
    return step;
}

Result<PreTokenizer::Step> PreTokenizer::parse_metaspace(const nlohmann::json& spec) {
    Step step;
    step.kind = Kind::Metaspace;
    step.replacement = spec.value("replacement", std::string("\xE2\x96\x81"));
    step.split = spec.value("split", true);
    // Older files have add_prefix_space instead of prepend_scheme.
    const std::string scheme =
        spec.value("prepend_scheme", spec.value("add_prefix_space", true) ? "always" : "never");
    if (scheme == "always") {
        step.prepend_scheme = PrependScheme::Always;
    } else if (scheme == "first") {
        step.prepend_scheme = PrependScheme::First;
    } else if (scheme == "never") {
        step.prepend_scheme = PrependScheme::Never;
    } else {
        return make_error(ErrorKind::Unsupported, "unsupported Metaspace prepend_scheme '{}'", scheme);
    }
    step.pattern = Pattern::literal(step.replacement);
    return step;
}

void PreTokenizer::apply(const Step& step, std::string_view piece, bool at_input_start,
                         std::vector<std::string>& out) {
    switch (step.kind) {
        case Kind::Metaspace: {
            std::string replaced = Pattern::literal(" ").replace_all(piece, step.replacement);
            const bool prepend = step.prepend_scheme == PrependScheme::Always ||
                                 (step.prepend_scheme == PrependScheme::First && at_input_start);
            if (prepend && !replaced.starts_with(step.replacement)) replaced.insert(0, step.replacement);
            if (!step.split) {
                out.push_back(std::move(replaced));
                return;
            }
            for (std::string& part :
                 split_text(replaced, step.pattern, SplitBehavior::MergedWithNext, false)) {
                out.push_back(std::move(part));
            }
            return;
        }
        case Kind::Split:
            for (std::string& part : split_text(piece, step.pattern, step.behavior, step.invert)) {
                out.push_back(std::move(part));
            }
            return;
        case Kind::ByteLevel: {
            std::string prefixed;
            if (step.add_prefix_space && !piece.starts_with(' ')) {
                prefixed = " " + std::string(piece);
                piece = prefixed;
            }
            std::vector<std::string> parts;
            if (step.use_regex) {
                parts = split_text(piece, step.pattern, SplitBehavior::Isolated, false);
            } else {
                parts.emplace_back(piece);
            }
            for (const std::string& part : parts) {
                std::string mapped;
                byte_level::append_encoded(mapped, part);
                out.push_back(std::move(mapped));
            }
            return;
        }
    }
}

std::vector<std::string> PreTokenizer::pre_tokenize(std::string_view text, bool at_input_start) const {
    std::vector<std::string> pieces;
    if (!text.empty()) pieces.emplace_back(text);
    for (const Step& step : steps_) {
        std::vector<std::string> next;
        next.reserve(pieces.size());
        // Only the first piece starts at the beginning of the input.
        for (size_t i = 0; i < pieces.size(); ++i) apply(step, pieces[i], at_input_start && i == 0, next);
        pieces = std::move(next);
    }
    return pieces;
}

}  // namespace lmrun
