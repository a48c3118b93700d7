#include "structured/pushdown_automaton.h"

#include <algorithm>
#include <unordered_map>

#include "structured/nfa_builder.h"

namespace lmrun::structured {
// Named, not anonymous: AutomatonBuilder (the automaton's friend, so of external linkage) holds
// these as members, which GCC warns about when the types have internal linkage (-Wsubobject-linkage,
// seen in unity builds).
namespace automaton_builder_detail {

struct VectorHash {
    size_t operator()(const std::vector<int32_t>& v) const {
        uint64_t h = 0xcbf29ce484222325ull ^ v.size();
        for (int32_t x : v) h = (h ^ uint32_t(x)) * 0x100000001b3ull;
        return size_t(h ^ (h >> 29));
    }
};

// Out-edges of one rule's NFA, grouped by source state.
struct NfaIndex {
    std::vector<int32_t> offsets;
    std::vector<const NfaEdge*> edges;
    std::vector<bool> important;  // has a byte or call edge, or is the accept state

    explicit NfaIndex(const RuleNfa& nfa)
        : offsets(size_t(nfa.num_states) + 1, 0), important(size_t(nfa.num_states), false) {
        for (const NfaEdge& edge : nfa.edges) ++offsets[size_t(edge.source) + 1];
        for (size_t i = 1; i < offsets.size(); ++i) offsets[i] += offsets[i - 1];
        edges.resize(nfa.edges.size());
        std::vector<int32_t> fill(offsets.begin(), offsets.end() - 1);
        for (const NfaEdge& edge : nfa.edges) {
            edges[size_t(fill[size_t(edge.source)]++)] = &edge;
            if (edge.kind != NfaEdge::Kind::Epsilon) important[size_t(edge.source)] = true;
        }
        important[size_t(nfa.accept)] = true;
    }
};

}  // namespace automaton_builder_detail

using automaton_builder_detail::NfaIndex;
using automaton_builder_detail::VectorHash;

// Determinizes the rule NFAs into the automaton's tables, then trims it.
class AutomatonBuilder {
  public:
    AutomatonBuilder(const std::vector<RuleNfa>& nfas, const AutomatonLimits& limits)
        : nfas_(nfas), limits_(limits) {}

    Result<PushdownAutomaton> build() {
        compute_byte_classes();
        pda_.rule_start_.resize(nfas_.size());
        pda_.rule_names_.resize(nfas_.size());
        for (size_t r = 0; r < nfas_.size(); ++r) {
            pda_.rule_names_[r] = nfas_[r].name;
            LMRUN_RETURN_IF_ERROR(determinize(int32_t(r)));
        }
        pda_.call_offsets_.assign(size_t(pda_.num_states()) + 1, 0);
        for (size_t s = 0; s < state_calls_.size(); ++s)
            pda_.call_offsets_[s + 1] = pda_.call_offsets_[s] + int32_t(state_calls_[s].size());
        for (const auto& calls : state_calls_)
            pda_.calls_.insert(pda_.calls_.end(), calls.begin(), calls.end());
        LMRUN_RETURN_IF_ERROR(trim());
        LMRUN_RETURN_IF_ERROR(check_left_recursion());
        return std::move(pda_);
    }

  private:
    void compute_byte_classes() {
        std::array<bool, 257> boundary{};
        boundary[0] = true;
        for (const RuleNfa& nfa : nfas_) {
            for (const NfaEdge& edge : nfa.edges) {
                if (edge.kind != NfaEdge::Kind::Byte) continue;
                boundary[edge.first] = true;
                boundary[size_t(edge.last) + 1] = true;
            }
            // Bytes of excluded words get classes of their own: the word trie follows single bytes.
            for (const std::string& word : nfa.excluded_words) {
                for (char c : word) {
                    boundary[static_cast<uint8_t>(c)] = true;
                    boundary[size_t(static_cast<uint8_t>(c)) + 1] = true;
                }
            }
        }
        int32_t cls = -1;
        for (int b = 0; b < 256; ++b) {
            if (boundary[size_t(b)]) ++cls;
            pda_.byte_class_[size_t(b)] = uint8_t(cls);
        }
        pda_.num_byte_classes_ = cls + 1;
    }

    void epsilon_closure(const NfaIndex& index, std::vector<int32_t>& states) {
        ++stamp_;
        std::vector<int32_t> stack(states.begin(), states.end());
        states.clear();
        while (!stack.empty()) {
            int32_t s = stack.back();
            stack.pop_back();
            if (seen_[size_t(s)] == stamp_) continue;
            seen_[size_t(s)] = stamp_;
            if (index.important[size_t(s)]) states.push_back(s);
            for (int32_t i = index.offsets[size_t(s)]; i < index.offsets[size_t(s) + 1]; ++i) {
                const NfaEdge* edge = index.edges[size_t(i)];
                if (edge->kind == NfaEdge::Kind::Epsilon && seen_[size_t(edge->target)] != stamp_)
                    stack.push_back(edge->target);
            }
        }
        std::sort(states.begin(), states.end());
    }

    // Keys of rules with excluded words end with -2 - (trie node), or -1 once off the trie.
    static int32_t trie_marker(int32_t node) { return node < 0 ? -1 : -2 - node; }
    static int32_t trie_node_of(const std::vector<int32_t>& key) {
        return key.empty() || key.back() >= 0 ? -1 : key.back() == -1 ? -1 : -2 - key.back();
    }

    Result<int32_t> intern(const std::vector<int32_t>& key, int32_t rule, const RuleNfa& nfa,
                           std::vector<int32_t>& worklist) {
        auto found = state_ids_.find(key);
        if (found != state_ids_.end()) return found->second;
        if (pda_.num_states() >= limits_.max_dfa_states) {
            return make_error(ErrorKind::ResourceExhausted,
                              "the grammar is too large: more than {} automaton states",
                              limits_.max_dfa_states);
        }
        const int32_t id = pda_.num_states();
        const int32_t node = trie_node_of(key);
        const bool final = std::find(key.begin(), key.end(), nfa.accept) != key.end() &&
                           !(node >= 0 && word_trie_[size_t(node)].is_word);
        pda_.state_flags_.push_back(final ? PushdownAutomaton::kFinal : 0);
        pda_.rule_of_state_.push_back(rule);
        pda_.transitions_.resize(pda_.transitions_.size() + size_t(pda_.num_byte_classes_), -1);
        state_calls_.emplace_back();
        state_ids_.emplace(key, id);
        members_.push_back(key);
        worklist.push_back(id);
        return id;
    }

    // The trie of a rule's excluded words (node 0 = the root).
    struct TrieNode {
        bool is_word = false;
        std::array<int32_t, 256> child;
        TrieNode() { child.fill(-1); }
    };

    Status build_word_trie(const RuleNfa& nfa) {
        word_trie_.clear();
        if (nfa.excluded_words.empty()) return ok_status();
        for (const NfaEdge& edge : nfa.edges) {
            if (edge.kind == NfaEdge::Kind::Call)
                return make_error("rule '{}' excludes words but calls other rules", nfa.name);
        }
        word_trie_.emplace_back();
        for (const std::string& word : nfa.excluded_words) {
            int32_t node = 0;
            for (char c : word) {
                const uint8_t byte = static_cast<uint8_t>(c);
                if (word_trie_[size_t(node)].child[byte] < 0) {
                    word_trie_[size_t(node)].child[byte] = int32_t(word_trie_.size());
                    word_trie_.emplace_back();
                }
                node = word_trie_[size_t(node)].child[byte];
            }
            word_trie_[size_t(node)].is_word = true;
        }
        return ok_status();
    }

    // The trie position after byte class `cls` from `node` (-1: off the trie for good).
    int32_t next_trie_node(int32_t node, int32_t cls) const {
        if (node < 0) return -1;
        for (int b = 0; b < 256; ++b) {
            if (pda_.byte_class_[size_t(b)] == cls) return word_trie_[size_t(node)].child[size_t(b)];
        }
        return -1;
    }

    Status determinize(int32_t rule) {
        const RuleNfa& nfa = nfas_[size_t(rule)];
        LMRUN_RETURN_IF_ERROR(build_word_trie(nfa));
        const bool with_trie = !word_trie_.empty();
        NfaIndex index(nfa);
        seen_.assign(size_t(nfa.num_states), 0);
        stamp_ = 0;
        state_ids_.clear();
        std::vector<int32_t> worklist;
        std::vector<int32_t> start{nfa.start};
        epsilon_closure(index, start);
        if (with_trie) start.push_back(trie_marker(0));
        LMRUN_ASSIGN_OR_RETURN(pda_.rule_start_[size_t(rule)], intern(start, rule, nfa, worklist));
        const int32_t num_classes = pda_.num_byte_classes_;
        std::vector<std::vector<int32_t>> class_targets(static_cast<size_t>(num_classes));
        while (!worklist.empty()) {
            const int32_t state = worklist.back();
            worklist.pop_back();
            const std::vector<int32_t> members = members_[size_t(state)];
            const int32_t trie_node = with_trie ? trie_node_of(members) : -1;
            for (auto& targets : class_targets) targets.clear();
            std::vector<std::pair<int32_t, int32_t>> call_targets;  // (rule, nfa target)
            for (int32_t s : members) {
                if (s < 0) continue;  // the trie marker
                for (int32_t i = index.offsets[size_t(s)]; i < index.offsets[size_t(s) + 1]; ++i) {
                    const NfaEdge* edge = index.edges[size_t(i)];
                    if (edge->kind == NfaEdge::Kind::Byte) {
                        for (int c = pda_.byte_class_[edge->first]; c <= pda_.byte_class_[edge->last]; ++c)
                            class_targets[size_t(c)].push_back(edge->target);
                    } else if (edge->kind == NfaEdge::Kind::Call) {
                        call_targets.emplace_back(edge->rule, edge->target);
                    }
                }
            }
            for (int32_t c = 0; c < num_classes; ++c) {
                if (class_targets[size_t(c)].empty()) continue;
                std::vector<int32_t> key = class_targets[size_t(c)];
                epsilon_closure(index, key);
                if (with_trie) key.push_back(trie_marker(next_trie_node(trie_node, c)));
                LMRUN_ASSIGN_OR_RETURN(int32_t target, intern(key, rule, nfa, worklist));
                pda_.transitions_[size_t(state) * size_t(num_classes) + size_t(c)] = target;
            }
            std::sort(call_targets.begin(), call_targets.end());
            for (size_t i = 0; i < call_targets.size();) {
                const int32_t callee = call_targets[i].first;
                std::vector<int32_t> key;
                for (; i < call_targets.size() && call_targets[i].first == callee; ++i)
                    key.push_back(call_targets[i].second);
                epsilon_closure(index, key);
                LMRUN_ASSIGN_OR_RETURN(int32_t target, intern(key, rule, nfa, worklist));
                state_calls_[size_t(state)].push_back(PdaCall{callee, target});
            }
        }
        return ok_status();
    }

    // Marks the states that can reach a final state of their rule (calls count once
    // their callee can finish), then drops every transition and call into dead ends.
    Status trim() {
        const int32_t n = pda_.num_states();
        const int32_t num_classes = pda_.num_byte_classes_;
        std::vector<std::vector<int32_t>> byte_preds(static_cast<size_t>(n));
        std::vector<std::vector<std::pair<int32_t, int32_t>>> call_preds(
            static_cast<size_t>(n));  // ret -> (source, callee)
        std::vector<std::vector<std::pair<int32_t, int32_t>>> calls_of_rule(nfas_.size());  // (source, ret)
        for (int32_t s = 0; s < n; ++s) {
            for (int32_t c = 0; c < num_classes; ++c) {
                int32_t t = pda_.transitions_[size_t(s) * size_t(num_classes) + size_t(c)];
                if (t >= 0) byte_preds[size_t(t)].push_back(s);
            }
            for (const PdaCall& call : pda_.calls(s)) {
                call_preds[size_t(call.return_state)].emplace_back(s, call.rule);
                calls_of_rule[size_t(call.rule)].emplace_back(s, call.return_state);
            }
        }
        std::vector<bool> live(size_t(n), false), productive(nfas_.size(), false);
        std::vector<int32_t> work;
        auto mark = [&](int32_t s) {
            if (!live[size_t(s)]) {
                live[size_t(s)] = true;
                work.push_back(s);
            }
        };
        for (int32_t s = 0; s < n; ++s) {
            if (pda_.is_final(s)) mark(s);
        }
        while (!work.empty()) {
            int32_t s = work.back();
            work.pop_back();
            for (int32_t p : byte_preds[size_t(s)]) mark(p);
            for (auto [p, callee] : call_preds[size_t(s)]) {
                if (productive[size_t(callee)]) mark(p);
            }
            const int32_t rule = pda_.rule_of_state_[size_t(s)];
            if (pda_.rule_start_[size_t(rule)] == s && !productive[size_t(rule)]) {
                productive[size_t(rule)] = true;
                for (auto [p, ret] : calls_of_rule[size_t(rule)]) {
                    if (live[size_t(ret)]) mark(p);
                }
            }
        }
        if (!productive[0]) return make_error("the grammar matches no string");
        for (size_t i = 0; i < pda_.transitions_.size(); ++i) {
            int32_t& t = pda_.transitions_[i];
            if (t >= 0 && !live[size_t(t)]) t = -1;
        }
        std::vector<PdaCall> kept;
        std::vector<int32_t> offsets(size_t(n) + 1, 0);
        for (int32_t s = 0; s < n; ++s) {
            for (const PdaCall& call : pda_.calls(s)) {
                if (productive[size_t(call.rule)] && live[size_t(call.return_state)]) kept.push_back(call);
            }
            offsets[size_t(s) + 1] = int32_t(kept.size());
        }
        pda_.calls_ = std::move(kept);
        pda_.call_offsets_ = std::move(offsets);
        pda_.rule_is_called_.assign(nfas_.size(), 0);
        for (int32_t s = 0; s < n; ++s) {
            if (!live[size_t(s)]) continue;
            uint8_t& flags = pda_.state_flags_[size_t(s)];
            for (int32_t c = 0; c < num_classes; ++c) {
                if (pda_.transitions_[size_t(s) * size_t(num_classes) + size_t(c)] >= 0) {
                    flags |= PushdownAutomaton::kScans;
                    break;
                }
            }
            if (!pda_.calls(s).empty()) flags |= PushdownAutomaton::kCalls;
            for (const PdaCall& call : pda_.calls(s)) pda_.rule_is_called_[size_t(call.rule)] = 1;
        }
        for (int32_t& t : pda_.transitions_) {
            if (t < 0) {
                t = PushdownAutomaton::kNoTransition;
            } else if (pda_.state_flags_[size_t(t)] != PushdownAutomaton::kScans) {
                t |= PushdownAutomaton::kNotPlainBit;
            }
        }
        return ok_status();
    }

    // A rule that can call itself before consuming a byte would make closures infinite.
    Status check_left_recursion() {
        const int32_t num_rules = pda_.num_rules();
        std::vector<bool> nullable(size_t(num_rules), false);
        std::vector<bool> nullable_state(size_t(pda_.num_states()), false);
        for (int32_t s = 0; s < pda_.num_states(); ++s) nullable_state[size_t(s)] = pda_.is_final(s);
        for (bool changed = true; changed;) {
            changed = false;
            for (int32_t s = 0; s < pda_.num_states(); ++s) {
                if (nullable_state[size_t(s)]) continue;
                for (const PdaCall& call : pda_.calls(s)) {
                    if (nullable[size_t(call.rule)] && nullable_state[size_t(call.return_state)]) {
                        nullable_state[size_t(s)] = changed = true;
                        break;
                    }
                }
            }
            for (int32_t r = 0; r < num_rules; ++r) {
                if (!nullable[size_t(r)] && nullable_state[size_t(pda_.rule_start(r))])
                    nullable[size_t(r)] = changed = true;
            }
        }
        std::vector<int32_t> visited(size_t(pda_.num_states()), -1);
        for (int32_t r = 0; r < num_rules; ++r) {
            if (!pda_.rule_is_called(r)) continue;
            std::vector<int32_t> stack{pda_.rule_start(r)};
            while (!stack.empty()) {
                int32_t s = stack.back();
                stack.pop_back();
                if (visited[size_t(s)] == r) continue;
                visited[size_t(s)] = r;
                for (const PdaCall& call : pda_.calls(s)) {
                    if (call.rule == r) {
                        return make_error(
                            "rule '{}' is left-recursive: it can reach itself without consuming "
                            "input",
                            pda_.rule_name(r));
                    }
                    stack.push_back(pda_.rule_start(call.rule));
                    if (nullable[size_t(call.rule)]) stack.push_back(call.return_state);
                }
            }
        }
        return ok_status();
    }

    const std::vector<RuleNfa>& nfas_;
    const AutomatonLimits& limits_;
    PushdownAutomaton pda_;
    std::vector<std::vector<PdaCall>> state_calls_;
    std::vector<std::vector<int32_t>> members_;  // per automaton state: its NFA states
    std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> state_ids_;
    std::vector<uint32_t> seen_;
    uint32_t stamp_ = 0;
    std::vector<TrieNode> word_trie_;  // of the rule being determinized
};

Result<PushdownAutomaton> PushdownAutomaton::build(const Grammar& grammar, const AutomatonLimits& limits) {
    LMRUN_ASSIGN_OR_RETURN(std::vector<RuleNfa> nfas, build_rule_nfas(grammar, limits));
    AutomatonBuilder builder(nfas, limits);
    return builder.build();
}

}  // namespace lmrun::structured
