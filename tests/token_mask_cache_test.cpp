// The adaptive token mask cache against a brute-force classification that runs
// every token's bytes through the stepper on its own: for every automaton state
// of several grammars (small vocabularies), every (state, return state) pair of
// their called rules, and for sampled states on the real Qwen3 vocabulary, the
// accepted, uncertain and rejected sets agree exactly.
#include "structured/token_mask_cache.h"

#include <random>

#include <gtest/gtest.h>

#include "structured/ebnf_parser.h"
#include "structured/pda_stepper.h"
#include "structured_test_util.h"

namespace lmrun::structured {
namespace {

using testing::compile_or_die;

enum class Verdict { Accepted, Uncertain, Rejected };

// A token from `state` alone (or with `return_state` below it): accepted if every
// byte moves; uncertain if the bottom rule can end before the last byte (the rest
// belongs to the caller).
Verdict classify(const PushdownAutomaton& pda, int32_t state, std::string_view bytes,
                 int32_t return_state = -1) {
    const int32_t bottom = return_state >= 0 ? return_state : state;
    const bool escapes_matter = pda.rule_is_called(pda.rule_of_state(bottom));
    PdaStepper stepper(pda);
    StackArena arena;
    const int32_t parent = return_state >= 0 ? arena.push(return_state, -1) : -1;
    std::vector<StackConfig> current{{state, parent}}, next;
    bool escaped = false;
    for (size_t i = 0; i < bytes.size(); ++i) {
        StepResult step = stepper.advance(arena, current, static_cast<uint8_t>(bytes[i]), next);
        if (!step.moved) return escaped ? Verdict::Uncertain : Verdict::Rejected;
        if (step.reached_end && escapes_matter && i + 1 < bytes.size()) escaped = true;
        std::swap(current, next);
    }
    return Verdict::Accepted;
}

// states[i] with return_states[i] below it (-1: none).
void expect_cache_matches_brute_force(const CompiledGrammar& compiled, const std::vector<int32_t>& states,
                                      const std::string& label, std::vector<int32_t> return_states = {}) {
    const PushdownAutomaton& pda = compiled.automaton();
    const TokenVocabulary& vocabulary = compiled.vocabulary();
    std::vector<uint32_t> accepted_mask(size_t(vocabulary.num_mask_words()));
    return_states.resize(states.size(), -1);
    for (size_t i = 0; i < states.size(); ++i) {
        const int32_t state = states[i];
        const int32_t return_state = return_states[i];
        const StateTokenMask& cached = return_state >= 0 ? compiled.mask_cache().get(state, return_state)
                                                         : compiled.mask_cache().get(state);
        cached.fill_accepted(vocabulary, accepted_mask);
        std::vector<bool> uncertain(size_t(vocabulary.vocab_size()), false);
        for (int32_t position : cached.uncertain)
            uncertain[size_t(vocabulary.trie_tokens()[size_t(position)])] = true;
        int32_t num_accepted = 0;
        for (int32_t id : vocabulary.trie_tokens()) {
            const Verdict expected = classify(pda, state, vocabulary.token_bytes(id), return_state);
            const bool is_accepted = accepted_mask[size_t(id) / 32] & (1u << (id % 32));
            const Verdict actual = is_accepted             ? Verdict::Accepted
                                   : uncertain[size_t(id)] ? Verdict::Uncertain
                                                           : Verdict::Rejected;
            ASSERT_EQ(int(actual), int(expected))
                << label << ": state " << state << " over " << return_state << ", token " << id << " \""
                << vocabulary.token_bytes(id) << "\"";
            num_accepted += is_accepted;
        }
        EXPECT_EQ(num_accepted, cached.num_accepted) << label << ": state " << state;
    }
}

std::vector<int32_t> all_states(const PushdownAutomaton& pda) {
    std::vector<int32_t> states;
    for (int32_t s = 0; s < pda.num_states(); ++s) {
        if (pda.flags(s) & PushdownAutomaton::kScans) states.push_back(s);
    }
    return states;
}

const char* const kGrammars[] = {
    R"g(root ::= "a" root "b" | "")g",
    R"g(root ::= item*
        item ::= "(" root ")" | "x" | "xy")g",
    R"g(root ::= ("ab" | "a"){2,4} "c"?)g",
    R"g(root ::= value
        value ::= "[" (value ("," value)*)? "]" | [0-9]+ | "\"" [^"\\]{0,3} "\"")g",
    R"g(root ::= "{" pair ("," pair)* "}"
        pair ::= str ":" num
        str ::= "\"" [a-c]* "\""
        num ::= "-"? [0-9]+)g",
};

TEST(TokenMaskCache, EveryStateMatchesBruteForceOnSmallVocabularies) {
    for (const char* text : kGrammars) {
        auto grammar = parse_ebnf(text);
        ASSERT_TRUE(grammar.ok()) << grammar.error().message;
        for (auto vocabulary : {testing::exhaustive_vocabulary("ab()x[],0\"", 3),
                                testing::random_vocabulary("abcxy()[],:\"{}-019", 800, 6, 5)}) {
            auto compiled = compile_or_die(*grammar, vocabulary);
            expect_cache_matches_brute_force(*compiled, all_states(compiled->automaton()), text);
        }
    }
}

// Every scanning state of a called rule, over every return state of a call to that rule.
void pairs_of_called_rules(const PushdownAutomaton& pda, std::vector<int32_t>& states,
                           std::vector<int32_t>& return_states) {
    for (int32_t caller = 0; caller < pda.num_states(); ++caller) {
        for (const PdaCall& call : pda.calls(caller)) {
            for (int32_t s = 0; s < pda.num_states(); ++s) {
                if (pda.rule_of_state(s) != call.rule || !(pda.flags(s) & PushdownAutomaton::kScans))
                    continue;
                states.push_back(s);
                return_states.push_back(call.return_state);
            }
        }
    }
}

TEST(TokenMaskCache, PairEntriesMatchBruteForceWithTheReturnStateBelow) {
    int64_t pairs = 0;
    for (const char* text : kGrammars) {
        auto grammar = parse_ebnf(text);
        ASSERT_TRUE(grammar.ok()) << grammar.error().message;
        auto compiled =
            compile_or_die(*grammar, testing::random_vocabulary("abcxy()[],:\"{}-019", 800, 6, 7));
        std::vector<int32_t> states, return_states;
        pairs_of_called_rules(compiled->automaton(), states, return_states);
        expect_cache_matches_brute_force(*compiled, states, text, return_states);
        pairs += int64_t(states.size());
    }
    EXPECT_GT(pairs, 20);
}

TEST(TokenMaskCache, SampledStatesMatchBruteForceOnQwen3) {
    auto grammar = parse_ebnf(R"g(root ::= "{" ws pair ("," ws pair)* "}"
        pair ::= str ws ":" ws value
        value ::= str | [0-9]+ | "[" (value ("," value)*)? "]" | root
        str ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/nt])* "\""
        ws ::= [ \n]{0,2})g");
    ASSERT_TRUE(grammar.ok()) << grammar.error().message;
    auto compiled = compile_or_die(*grammar, testing::qwen3_vocabulary());
    std::vector<int32_t> states = all_states(compiled->automaton());
    std::mt19937_64 rng(3);
    std::shuffle(states.begin(), states.end(), rng);
    states.resize(std::min<size_t>(states.size(), 8));
    expect_cache_matches_brute_force(*compiled, states, "qwen3 json");
}

}  // namespace
}  // namespace lmrun::structured
