#include "structured/nfa_builder.h"

#include <algorithm>
#include <unordered_map>

#include "structured/utf8_ranges.h"

namespace lmrun::structured {
namespace {

constexpr int64_t kSizeCap = int64_t(1) << 40;
// Inlining a chain of rules recurses once per rule; past this depth the rule is called instead.
constexpr int kMaxInlineDepth = 64;
// A repeated item is called rather than copied only if it is at least this large.
constexpr int64_t kMinCalledRepeatBody = 64;

int64_t saturating_add(int64_t a, int64_t b) {
    return std::min(kSizeCap, a + b);
}

int64_t saturating_mul(int64_t a, int64_t b) {
    if (a == 0 || b == 0) return 0;
    return a > kSizeCap / b ? kSizeCap : a * b;
}

// Rules on a reference cycle (Tarjan's strongly connected components, iterative).
std::vector<bool> find_recursive_rules(const Grammar& grammar, const std::vector<std::vector<RuleId>>& refs) {
    const int32_t n = grammar.num_rules();
    std::vector<int32_t> index(size_t(n), -1), low(size_t(n), 0);
    std::vector<bool> on_stack(size_t(n), false), recursive(size_t(n), false);
    std::vector<RuleId> stack;
    int32_t next_index = 0;
    struct Frame {
        RuleId rule;
        size_t next_ref;
    };
    for (RuleId start = 0; start < n; ++start) {
        if (index[size_t(start)] >= 0) continue;
        std::vector<Frame> frames{{start, 0}};
        index[size_t(start)] = low[size_t(start)] = next_index++;
        stack.push_back(start);
        on_stack[size_t(start)] = true;
        while (!frames.empty()) {
            Frame& frame = frames.back();
            const auto& out = refs[size_t(frame.rule)];
            if (frame.next_ref < out.size()) {
                RuleId to = out[frame.next_ref++];
                if (to == frame.rule) recursive[size_t(to)] = true;
                if (index[size_t(to)] < 0) {
                    index[size_t(to)] = low[size_t(to)] = next_index++;
                    stack.push_back(to);
                    on_stack[size_t(to)] = true;
                    frames.push_back({to, 0});
                } else if (on_stack[size_t(to)]) {
                    low[size_t(frame.rule)] = std::min(low[size_t(frame.rule)], index[size_t(to)]);
                }
                continue;
            }
            const RuleId rule = frame.rule;
            frames.pop_back();
            if (!frames.empty()) {
                RuleId parent = frames.back().rule;
                low[size_t(parent)] = std::min(low[size_t(parent)], low[size_t(rule)]);
            }
            if (low[size_t(rule)] != index[size_t(rule)]) continue;
            std::vector<RuleId> component;
            RuleId member;
            do {
                member = stack.back();
                stack.pop_back();
                on_stack[size_t(member)] = false;
                component.push_back(member);
            } while (member != rule);
            if (component.size() > 1) {
                for (RuleId r : component) recursive[size_t(r)] = true;
            }
        }
    }
    return recursive;
}

class NfaBuilder {
  public:
    NfaBuilder(const Grammar& grammar, const AutomatonLimits& limits) : grammar_(grammar), limits_(limits) {}

    Result<std::vector<RuleNfa>> build() {
        if (grammar_.root() < 0) return make_error("the grammar has no root rule");
        for (RuleId r = 0; r < grammar_.num_rules(); ++r) {
            if (grammar_.rule(r).body < 0)
                return make_error("rule '{}' is not defined", grammar_.rule(r).name);
        }
        std::vector<std::vector<RuleId>> refs(size_t(grammar_.num_rules()));
        for (RuleId r = 0; r < grammar_.num_rules(); ++r)
            collect_refs(grammar_.rule(r).body, refs[size_t(r)]);
        recursive_ = find_recursive_rules(grammar_, refs);
        size_memo_.assign(size_t(grammar_.num_exprs()), -1);
        automaton_rule_of_rule_.assign(size_t(grammar_.num_rules()), -1);
        call_rule(grammar_.root());
        for (size_t next = 0; next < pending_.size(); ++next) {
            const Pending job = pending_[next];
            RuleNfa nfa;
            nfa.name = job.name;
            nfa.excluded_words = job.excluded_words;
            nfa.num_states = 2;
            current_ = &nfa;
            LMRUN_RETURN_IF_ERROR(build_expr(job.body, 0, 1, 0));
            current_ = nullptr;
            rules_.push_back(std::move(nfa));
        }
        return std::move(rules_);
    }

  private:
    struct Pending {
        ExprId body;
        std::string name;
        std::vector<std::string> excluded_words;
    };

    void collect_refs(ExprId id, std::vector<RuleId>& out) const {
        const Expr& e = grammar_.expr(id);
        if (e.kind == ExprKind::RuleRef) out.push_back(e.rule);
        for (ExprId child : e.children) collect_refs(child, out);
    }

    int64_t size_of(ExprId id) {
        int64_t& memo = size_memo_[size_t(id)];
        if (memo >= 0) return memo;
        memo = 1;  // guards against cycles through (recursive) rules while computing
        const Expr& e = grammar_.expr(id);
        int64_t size = 1;
        switch (e.kind) {
            case ExprKind::Literal:
                size = std::max<int64_t>(1, int64_t(e.literal.size()));
                break;
            case ExprKind::CharClass:
                size = 1;
                for (CodepointRange range : e.ranges)
                    size = saturating_add(size, 3 * int64_t(utf8_sequences(range).size()));
                break;
            case ExprKind::RuleRef:
                size = recursive_[size_t(e.rule)] || automaton_rule_of_rule_[size_t(e.rule)] >= 0 ||
                               !grammar_.rule(e.rule).excluded_words.empty()
                           ? 1
                           : size_of(grammar_.rule(e.rule).body);
                break;
            case ExprKind::Sequence:
            case ExprKind::Choice:
                size = 2;
                for (ExprId child : e.children) size = saturating_add(size, size_of(child) + 1);
                break;
            case ExprKind::Repeat: {
                int64_t copies = e.max_repeat == kUnbounded ? std::max(e.min_repeat, 1) : e.max_repeat;
                size = saturating_add(saturating_mul(size_of(e.children[0]) + 2, copies), 2);
                break;
            }
        }
        memo = size;
        return size;
    }

    int32_t call_rule(RuleId rule) {
        int32_t& id = automaton_rule_of_rule_[size_t(rule)];
        if (id < 0) {
            id = int32_t(pending_.size());
            pending_.push_back(
                {grammar_.rule(rule).body, grammar_.rule(rule).name, grammar_.rule(rule).excluded_words});
        }
        return id;
    }

    int32_t call_repeat_body(ExprId body) {
        auto [it, inserted] = automaton_rule_of_expr_.try_emplace(body, int32_t(pending_.size()));
        if (inserted) pending_.push_back({body, "repeated-" + std::to_string(body), {}});
        return it->second;
    }

    Result<int32_t> new_state() {
        if (++total_states_ > limits_.max_nfa_states) {
            return make_error(ErrorKind::ResourceExhausted,
                              "the grammar is too large: more than {} automaton states after expanding "
                              "repetitions",
                              limits_.max_nfa_states);
        }
        return current_->num_states++;
    }

    void add_edge(NfaEdge edge) { current_->edges.push_back(edge); }
    void epsilon(int32_t from, int32_t to) { add_edge({NfaEdge::Kind::Epsilon, 0, 0, -1, from, to}); }

    Status build_literal(const std::string& bytes, int32_t from, int32_t to) {
        if (bytes.empty()) {
            epsilon(from, to);
            return ok_status();
        }
        int32_t current = from;
        for (size_t i = 0; i < bytes.size(); ++i) {
            int32_t next = to;
            if (i + 1 < bytes.size()) {
                LMRUN_ASSIGN_OR_RETURN(next, new_state());
            }
            const uint8_t byte = static_cast<uint8_t>(bytes[i]);
            add_edge({NfaEdge::Kind::Byte, byte, byte, -1, current, next});
            current = next;
        }
        return ok_status();
    }

    Status build_class(const std::vector<CodepointRange>& ranges, int32_t from, int32_t to) {
        for (CodepointRange range : ranges) {
            for (const Utf8Sequence& sequence : utf8_sequences(range)) {
                int32_t current = from;
                for (size_t i = 0; i < sequence.size(); ++i) {
                    int32_t next = to;
                    if (i + 1 < sequence.size()) {
                        LMRUN_ASSIGN_OR_RETURN(next, new_state());
                    }
                    add_edge({NfaEdge::Kind::Byte, sequence[i].first, sequence[i].last, -1, current, next});
                    current = next;
                }
            }
        }
        return ok_status();
    }

    Status build_repeat(const Expr& e, int32_t from, int32_t to, int depth) {
        const ExprId body = e.children[0];
        const int64_t copies = e.max_repeat == kUnbounded ? std::max(e.min_repeat, 1) : e.max_repeat;
        const int64_t body_size = size_of(body);
        const bool call_body = copies > 1 && body_size >= kMinCalledRepeatBody &&
                               saturating_mul(body_size, copies) > limits_.inline_limit;
        auto build_body = [&](int32_t a, int32_t b) -> Status {
            if (!call_body) return build_expr(body, a, b, depth);
            add_edge({NfaEdge::Kind::Call, 0, 0, call_repeat_body(body), a, b});
            return ok_status();
        };
        int32_t current = from;
        for (int32_t i = 0; i < e.min_repeat; ++i) {
            LMRUN_ASSIGN_OR_RETURN(int32_t next, new_state());
            LMRUN_RETURN_IF_ERROR(build_body(current, next));
            current = next;
        }
        if (e.max_repeat == kUnbounded) {
            LMRUN_ASSIGN_OR_RETURN(int32_t loop_head, new_state());
            LMRUN_ASSIGN_OR_RETURN(int32_t loop_tail, new_state());
            epsilon(current, loop_head);
            LMRUN_RETURN_IF_ERROR(build_body(loop_head, loop_tail));
            epsilon(loop_tail, loop_head);
            epsilon(loop_head, to);
            return ok_status();
        }
        for (int32_t i = e.min_repeat; i < e.max_repeat; ++i) {
            epsilon(current, to);
            LMRUN_ASSIGN_OR_RETURN(int32_t next, new_state());
            LMRUN_RETURN_IF_ERROR(build_body(current, next));
            current = next;
        }
        epsilon(current, to);
        return ok_status();
    }

    // `depth` counts the rules inlined on the way here.
    Status build_expr(ExprId id, int32_t from, int32_t to, int depth) {
        const Expr& e = grammar_.expr(id);
        switch (e.kind) {
            case ExprKind::Literal:
                return build_literal(e.literal, from, to);
            case ExprKind::CharClass:
                return build_class(e.ranges, from, to);
            case ExprKind::RuleRef: {
                const bool call = recursive_[size_t(e.rule)] ||
                                  !grammar_.rule(e.rule).excluded_words.empty() ||
                                  automaton_rule_of_rule_[size_t(e.rule)] >= 0 || depth > kMaxInlineDepth ||
                                  size_of(grammar_.rule(e.rule).body) > limits_.inline_limit;
                if (call) {
                    add_edge({NfaEdge::Kind::Call, 0, 0, call_rule(e.rule), from, to});
                    return ok_status();
                }
                return build_expr(grammar_.rule(e.rule).body, from, to, depth + 1);
            }
            case ExprKind::Sequence: {
                int32_t current = from;
                for (size_t i = 0; i < e.children.size(); ++i) {
                    int32_t next = to;
                    if (i + 1 < e.children.size()) {
                        LMRUN_ASSIGN_OR_RETURN(next, new_state());
                    }
                    LMRUN_RETURN_IF_ERROR(build_expr(e.children[i], current, next, depth));
                    current = next;
                }
                if (e.children.empty()) epsilon(from, to);
                return ok_status();
            }
            case ExprKind::Choice:
                for (ExprId child : e.children) {
                    // Each alternative gets its own entry state so that loops inside one never leak into
                    // another.
                    LMRUN_ASSIGN_OR_RETURN(int32_t entry, new_state());
                    epsilon(from, entry);
                    LMRUN_RETURN_IF_ERROR(build_expr(child, entry, to, depth));
                }
                return ok_status();
            case ExprKind::Repeat:
                return build_repeat(e, from, to, depth);
        }
        return ok_status();
    }

    const Grammar& grammar_;
    const AutomatonLimits& limits_;
    std::vector<bool> recursive_;
    std::vector<int64_t> size_memo_;
    std::vector<int32_t> automaton_rule_of_rule_;
    std::unordered_map<ExprId, int32_t> automaton_rule_of_expr_;
    std::vector<Pending> pending_;
    std::vector<RuleNfa> rules_;
    RuleNfa* current_ = nullptr;
    int64_t total_states_ = 0;
};

}  // namespace

Result<std::vector<RuleNfa>> build_rule_nfas(const Grammar& grammar, const AutomatonLimits& limits) {
    NfaBuilder builder(grammar, limits);
    return builder.build();
}

}  // namespace lmrun::structured
