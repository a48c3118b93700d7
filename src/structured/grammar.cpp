#include "structured/grammar.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/check.h"
#include "tokenizer/unicode.h"

namespace lmrun::structured {
namespace {

constexpr char32_t kSurrogateFirst = 0xD800;
constexpr char32_t kSurrogateLast = 0xDFFF;

// A code point as it appears inside "..." or [...] in EBNF text.
std::string escape_codepoint(char32_t cp, bool in_class) {
    switch (cp) {
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        case '\\':
            return "\\\\";
        case '"':
            return in_class ? "\"" : "\\\"";
        case ']':
        case '[':
        case '-':
        case '^':
            if (in_class) return std::string("\\") + char(cp);
            break;
        default:
            break;
    }
    if (cp < 0x20 || cp == 0x7F) return fmt::format("\\x{:02X}", uint32_t(cp));
    if (cp > kMaxCodepoint) return fmt::format("\\U{:08X}", uint32_t(cp));
    std::string out;
    unicode::append_utf8(out, cp);
    return out;
}

bool needs_parens_in_sequence(const Expr& expr) {
    return expr.kind == ExprKind::Choice;
}

bool needs_parens_in_repeat(const Expr& expr) {
    return expr.kind == ExprKind::Choice || expr.kind == ExprKind::Sequence ||
           expr.kind == ExprKind::Repeat || (expr.kind == ExprKind::Literal && expr.literal.empty());
}

std::string quantifier(int32_t min_repeat, int32_t max_repeat) {
    if (min_repeat == 0 && max_repeat == kUnbounded) return "*";
    if (min_repeat == 1 && max_repeat == kUnbounded) return "+";
    if (min_repeat == 0 && max_repeat == 1) return "?";
    if (max_repeat == kUnbounded) return fmt::format("{{{},}}", min_repeat);
    if (min_repeat == max_repeat) return fmt::format("{{{}}}", min_repeat);
    return fmt::format("{{{},{}}}", min_repeat, max_repeat);
}

}  // namespace

std::vector<CodepointRange> normalize_ranges(const std::vector<CodepointRange>& ranges) {
    std::vector<CodepointRange> split;
    for (CodepointRange range : ranges) {
        if (range.first > range.last) continue;
        range.last = std::min(range.last, kMaxCodepoint);
        if (range.first > kMaxCodepoint) continue;
        // Surrogates have no UTF-8 encoding: cut them out.
        if (range.first < kSurrogateFirst && range.last >= kSurrogateFirst) {
            split.push_back({range.first, kSurrogateFirst - 1});
            range.first = kSurrogateFirst;
        }
        if (range.first >= kSurrogateFirst && range.first <= kSurrogateLast) {
            if (range.last <= kSurrogateLast) continue;
            range.first = kSurrogateLast + 1;
        }
        split.push_back(range);
    }
    std::sort(split.begin(), split.end(), [](auto a, auto b) { return a.first < b.first; });
    std::vector<CodepointRange> merged;
    for (CodepointRange range : split) {
        if (!merged.empty() && range.first <= merged.back().last + 1) {
            merged.back().last = std::max(merged.back().last, range.last);
        } else {
            merged.push_back(range);
        }
    }
    return merged;
}

std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges) {
    std::vector<CodepointRange> out;
    char32_t next = 0;
    for (CodepointRange range : ranges) {
        if (range.first > next) out.push_back({next, range.first - 1});
        next = range.last + 1;
    }
    if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
    return normalize_ranges(out);
}

ExprId Grammar::add(Expr expr) {
    exprs_.push_back(std::move(expr));
    return ExprId(exprs_.size() - 1);
}

ExprId Grammar::literal(std::string_view utf8) {
    Expr expr;
    expr.kind = ExprKind::Literal;
    expr.literal = std::string(utf8);
    return add(std::move(expr));
}

ExprId Grammar::char_class(const std::vector<CodepointRange>& ranges, bool negated) {
    Expr expr;
    expr.kind = ExprKind::CharClass;
    expr.ranges = normalize_ranges(ranges);
    if (negated) expr.ranges = complement_ranges(expr.ranges);
    return add(std::move(expr));
}

ExprId Grammar::ref(RuleId rule) {
    LMRUN_CHECK(rule >= 0 && rule < num_rules(), "reference to an undeclared rule");
    Expr expr;
    expr.kind = ExprKind::RuleRef;
    expr.rule = rule;
    return add(std::move(expr));
}

ExprId Grammar::sequence(std::vector<ExprId> items) {
    return group(ExprKind::Sequence, std::move(items));
}

ExprId Grammar::choice(std::vector<ExprId> alternatives) {
    return group(ExprKind::Choice, std::move(alternatives));
}

ExprId Grammar::group(ExprKind kind, std::vector<ExprId> children) {
    if (children.size() == 1) return children[0];
    Expr expr;
    expr.kind = kind;
    expr.children = std::move(children);
    return add(std::move(expr));
}

ExprId Grammar::repeat(ExprId item, int32_t min_repeat, int32_t max_repeat) {
    LMRUN_CHECK(min_repeat >= 0 && (max_repeat == kUnbounded || max_repeat >= min_repeat),
                "invalid repetition bounds");
    if (min_repeat == 1 && max_repeat == 1) return item;
    Expr expr;
    expr.kind = ExprKind::Repeat;
    expr.children = {item};
    expr.min_repeat = min_repeat;
    expr.max_repeat = max_repeat;
    return add(std::move(expr));
}

RuleId Grammar::add_rule(std::string_view name) {
    std::string unique(name);
    for (int suffix = 1; find_rule(unique) >= 0; ++suffix) unique = fmt::format("{}-{}", name, suffix);
    rules_.push_back(Rule{std::move(unique), -1, {}});
    return RuleId(rules_.size() - 1);
}

RuleId Grammar::add_rule(std::string_view name, ExprId body) {
    RuleId rule = add_rule(name);
    set_body(rule, body);
    return rule;
}

void Grammar::set_excluded_words(RuleId rule, std::vector<std::string> words) {
    rules_[size_t(rule)].excluded_words = std::move(words);
}

void Grammar::set_ref_target(ExprId ref, RuleId rule) {
    LMRUN_CHECK(exprs_[size_t(ref)].kind == ExprKind::RuleRef, "not a rule reference");
    exprs_[size_t(ref)].rule = rule;
}

void Grammar::set_body(RuleId rule, ExprId body) {
    rules_[size_t(rule)].body = body;
}

RuleId Grammar::find_rule(std::string_view name) const {
    for (size_t i = 0; i < rules_.size(); ++i) {
        if (rules_[i].name == name) return RuleId(i);
    }
    return -1;
}

std::string Grammar::expr_to_ebnf(ExprId id) const {
    const Expr& e = expr(id);
    switch (e.kind) {
        case ExprKind::Literal: {
            std::string out = "\"";
            for (size_t pos = 0; pos < e.literal.size();) {
                // Literals are valid UTF-8; print code points, escaping the syntax characters.
                unsigned char lead = static_cast<unsigned char>(e.literal[pos]);
                size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
                if (lead < 0x80) {
                    out += escape_codepoint(lead, false);
                } else {
                    out.append(e.literal, pos, length);
                }
                pos += length;
            }
            return out + "\"";
        }
        case ExprKind::CharClass: {
            std::string out = "[";
            for (CodepointRange range : e.ranges) {
                out += escape_codepoint(range.first, true);
                if (range.last != range.first) out += "-" + escape_codepoint(range.last, true);
            }
            return out + "]";
        }
        case ExprKind::RuleRef:
            return rule(e.rule).name;
        case ExprKind::Sequence: {
            std::string out;
            for (ExprId child : e.children) {
                if (!out.empty()) out += " ";
                std::string text = expr_to_ebnf(child);
                out += needs_parens_in_sequence(expr(child)) ? "(" + text + ")" : text;
            }
            return out.empty() ? "\"\"" : out;
        }
        case ExprKind::Choice: {
            std::string out;
            for (ExprId child : e.children) {
                if (!out.empty()) out += " | ";
                out += expr_to_ebnf(child);
            }
            return out;
        }
        case ExprKind::Repeat: {
            const Expr& child = expr(e.children[0]);
            std::string text = expr_to_ebnf(e.children[0]);
            if (needs_parens_in_repeat(child)) text = "(" + text + ")";
            return text + quantifier(e.min_repeat, e.max_repeat);
        }
    }
    return {};
}

std::string Grammar::to_ebnf() const {
    std::string out;
    auto print_rule = [&](RuleId id) {
        const Rule& r = rule(id);
        out += r.name + " ::= " + (r.body >= 0 ? expr_to_ebnf(r.body) : "[]");
        if (!r.excluded_words.empty())
            out += fmt::format("  # minus {} exact words", r.excluded_words.size());
        out += "\n";
    };
    if (root_ >= 0) print_rule(root_);
    for (RuleId id = 0; id < num_rules(); ++id) {
        if (id != root_) print_rule(id);
    }
    return out;
}

}  // namespace lmrun::structured
