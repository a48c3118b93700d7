// A context-free grammar over Unicode text, shaped like GBNF / W3C EBNF: named
// rules whose bodies are expressions built from literal strings, character
// classes (sets of code points), references to rules, sequences, alternatives
// and bounded or unbounded repetition. Every constraint source (EBNF text,
// regex, JSON Schema, choice) compiles to this one representation;
// pushdown_automaton.h turns it into byte-level automata.
//
// Expressions live in one arena and are referred to by ExprId; rules by RuleId.
// A rule may be declared before its body is known (forward and recursive
// references). to_ebnf() prints the grammar back in the EBNF syntax that
// ebnf_parser.h reads, so every grammar can be inspected and round-tripped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lmrun::structured {

using ExprId = int32_t;
using RuleId = int32_t;

// Inclusive range of code points.
struct CodepointRange {
    char32_t first;
    char32_t last;
};

inline constexpr char32_t kMaxCodepoint = 0x10FFFF;
inline constexpr int32_t kUnbounded = -1;

enum class ExprKind { Literal, CharClass, RuleRef, Sequence, Choice, Repeat };

struct Expr {
    ExprKind kind = ExprKind::Literal;
    std::string literal;                 // Literal: UTF-8 bytes; "" matches the empty string
    std::vector<CodepointRange> ranges;  // CharClass: sorted, disjoint, never surrogates; empty = no match
    RuleId rule = -1;                    // RuleRef
    std::vector<ExprId> children;        // Sequence, Choice; Repeat has exactly one
    int32_t min_repeat = 0;              // Repeat
    int32_t max_repeat = kUnbounded;     // Repeat; kUnbounded = no upper bound
};

struct Rule {
    std::string name;
    ExprId body = -1;  // -1 until defined
    // Exact byte strings the rule must not match even though its body does (object
    // keys that would repeat a declared property). Only for rules without recursion
    // or calls inside; such a rule is never inlined.
    std::vector<std::string> excluded_words;
};

class Grammar {
  public:
    ExprId literal(std::string_view utf8);
    ExprId empty() { return literal(""); }
    // Ranges may overlap and come in any order; `negated` takes the complement
    // over all code points. Surrogates (U+D800-U+DFFF) are never matched: they
    // have no UTF-8 encoding.
    ExprId char_class(const std::vector<CodepointRange>& ranges, bool negated = false);
    ExprId any_char() { return char_class({}, /*negated=*/true); }
    ExprId ref(RuleId rule);
    ExprId sequence(std::vector<ExprId> items);
    ExprId choice(std::vector<ExprId> alternatives);
    ExprId repeat(ExprId item, int32_t min_repeat, int32_t max_repeat);
    ExprId optional(ExprId item) { return repeat(item, 0, 1); }
    ExprId star(ExprId item) { return repeat(item, 0, kUnbounded); }
    ExprId plus(ExprId item) { return repeat(item, 1, kUnbounded); }

    // Declares a rule named `name`, or `name` plus a numeric suffix if taken.
    RuleId add_rule(std::string_view name);
    RuleId add_rule(std::string_view name, ExprId body);
    void set_body(RuleId rule, ExprId body);
    void set_excluded_words(RuleId rule, std::vector<std::string> words);
    // Points a reference at another rule (parsers resolving forward references).
    void set_ref_target(ExprId ref, RuleId rule);
    // -1 if no rule has this exact name.
    RuleId find_rule(std::string_view name) const;
    void set_root(RuleId rule) { root_ = rule; }

    RuleId root() const { return root_; }
    const Expr& expr(ExprId id) const { return exprs_[size_t(id)]; }
    const Rule& rule(RuleId id) const { return rules_[size_t(id)]; }
    int32_t num_rules() const { return int32_t(rules_.size()); }
    int32_t num_exprs() const { return int32_t(exprs_.size()); }

    // The grammar in EBNF, root rule first: `name ::= body` per line.
    std::string to_ebnf() const;
    std::string expr_to_ebnf(ExprId id) const;

  private:
    ExprId add(Expr expr);
    // A sequence or choice of `children`; one child stands for itself.
    ExprId group(ExprKind kind, std::vector<ExprId> children);

    std::vector<Expr> exprs_;
    std::vector<Rule> rules_;
    RuleId root_ = -1;
};

// Sorts and merges ranges; drops surrogates. Used by char_class and by callers
// that combine classes.
std::vector<CodepointRange> normalize_ranges(const std::vector<CodepointRange>& ranges);
// The complement of normalized ranges over [0, kMaxCodepoint] minus surrogates.
std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges);

}  // namespace lmrun::structured
