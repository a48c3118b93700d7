// The grammar matcher against independent references: every string (all short
// ones over a small alphabet, random longer ones) is accepted iff the reference
// recognizer derives it; every token mask equals the brute-force mask (each token
// tried on a copy of the matcher) along random generations over small
// vocabularies; rollback and copies behave as snapshots.
#include "structured/grammar_matcher.h"

#include <random>

#include <gtest/gtest.h>

#include "structured/ebnf_parser.h"
#include "structured_test_util.h"

namespace lmrun::structured {
namespace {

using testing::brute_force_mask;
using testing::compile_or_die;
using testing::fast_mask;
using testing::mask_ids;
using testing::random_vocabulary;
using testing::reference_matches;

struct GrammarCase {
    const char* name;
    const char* ebnf;
    std::vector<std::string> symbols;  // strings are built from these pieces
};

const std::vector<GrammarCase>& grammar_cases() {
    static const std::vector<GrammarCase> cases = {
        {"balanced", R"g(root ::= "a" root "b" | "")g", {"a", "b"}},
        {"nested_lists",
         R"g(root ::= item*
            item ::= "(" root ")" | "x")g",
         {"(", ")", "x"}},
        {"json_like",
         R"g(root ::= value
            value ::= "[" (value ("," value)*)? "]" | [0-9]+ | "\"" [^"\\]{0,3} "\""
        )g",
         {"[", "]", ",", "1", "0", "\"", "\\", "z"}},
        {"utf8_classes",
         R"g(root ::= [^a\n]{1,3} "a" | [é-ü]+ "\n")g",
         {"a", "b", "\xC3\xA9", "\xE2\x82\xAC", "\n", "\xC3\xBC", "\xC3"}},
        {"bounded_repeat", R"g(root ::= ("ab" | "a"){2,4} "c"?)g", {"a", "b", "c"}},
        {"nullable_star",
         R"g(root ::= x* "y"
            x ::= "" | "a" | z
            z ::= "b" z | "b")g",
         {"a", "b", "y"}},
        {"any_char_then_end", R"g(root ::= . . "!")g", {"!", "a", "\xF0\x9F\x98\x80", "\xF0\x9F"}},
        {"expression",
         R"g(root ::= expr
            expr ::= term (("+" | "-") term)*
            term ::= factor ("*" factor)*
            factor ::= [0-9] | "(" expr ")" | "-" factor)g",
         {"1", "+", "-", "*", "(", ")"}},
    };
    return cases;
}

std::vector<std::string> all_strings(const std::vector<std::string>& symbols, int max_pieces) {
    std::vector<std::string> out{""}, layer{""};
    for (int n = 1; n <= max_pieces; ++n) {
        std::vector<std::string> next;
        for (const std::string& prefix : layer) {
            for (const std::string& symbol : symbols) next.push_back(prefix + symbol);
        }
        out.insert(out.end(), next.begin(), next.end());
        layer = std::move(next);
    }
    return out;
}

std::string alphabet_of(const std::vector<std::string>& symbols) {
    std::string alphabet;
    for (const std::string& symbol : symbols) {
        for (char c : symbol) {
            if (alphabet.find(c) == std::string::npos) alphabet.push_back(c);
        }
    }
    return alphabet;
}

bool matcher_accepts(const std::shared_ptr<const CompiledGrammar>& compiled, const std::string& text) {
    GrammarMatcher matcher(compiled);
    return matcher.accept_bytes(text) && matcher.can_end();
}

TEST(GrammarMatcher, ShortStringsAcceptedIffReferenceDerivesThem) {
    for (const GrammarCase& c : grammar_cases()) {
        auto grammar = parse_ebnf(c.ebnf);
        ASSERT_TRUE(grammar.ok()) << c.name << ": " << grammar.error().message;
        auto compiled = compile_or_die(*grammar, random_vocabulary(alphabet_of(c.symbols), 40, 3, 1));
        const int max_pieces = c.symbols.size() > 5 ? 5 : 7;
        int accepted = 0;
        for (const std::string& text : all_strings(c.symbols, max_pieces)) {
            const bool expected = reference_matches(*grammar, text);
            accepted += expected;
            ASSERT_EQ(matcher_accepts(compiled, text), expected) << c.name << ": \"" << text << "\"";
        }
        EXPECT_GT(accepted, 0) << c.name << ": no accepted string, the test proves little";
    }
}

TEST(GrammarMatcher, RandomLongStringsAcceptedIffReferenceDerivesThem) {
    std::mt19937_64 rng(7);
    for (const GrammarCase& c : grammar_cases()) {
        auto grammar = parse_ebnf(c.ebnf);
        ASSERT_TRUE(grammar.ok());
        auto compiled = compile_or_die(*grammar, random_vocabulary(alphabet_of(c.symbols), 40, 3, 2));
        for (int trial = 0; trial < 3000; ++trial) {
            std::string text;
            const size_t pieces = 6 + rng() % 20;
            for (size_t i = 0; i < pieces; ++i) text += c.symbols[rng() % c.symbols.size()];
            ASSERT_EQ(matcher_accepts(compiled, text), reference_matches(*grammar, text))
                << c.name << ": \"" << text << "\"";
        }
    }
}

// Random generations: at every step the fast mask equals the brute-force mask,
// then a random allowed token is accepted; ends with an end token when allowed.
TEST(GrammarMatcher, MasksEqualBruteForceAlongRandomGenerations) {
    std::mt19937_64 rng(11);
    for (const GrammarCase& c : grammar_cases()) {
        auto grammar = parse_ebnf(c.ebnf);
        ASSERT_TRUE(grammar.ok());
        for (uint64_t vocab_seed = 0; vocab_seed < 3; ++vocab_seed) {
            auto vocabulary = random_vocabulary(alphabet_of(c.symbols), 300, 5, vocab_seed);
            auto compiled = compile_or_die(*grammar, vocabulary);
            for (int run = 0; run < 8; ++run) {
                GrammarMatcher matcher(compiled);
                std::string generated;
                for (int step = 0; step < 30 && !matcher.is_terminated(); ++step) {
                    const auto expected = brute_force_mask(matcher);
                    const auto actual = fast_mask(matcher);
                    ASSERT_EQ(mask_ids(actual), mask_ids(expected))
                        << c.name << " after \"" << generated << "\"";
                    const auto allowed = mask_ids(actual);
                    ASSERT_FALSE(allowed.empty()) << c.name << ": dead end after \"" << generated << "\"";
                    const int32_t token = allowed[rng() % allowed.size()];
                    ASSERT_TRUE(matcher.accept_token(token));
                    generated += vocabulary->token_bytes(token);
                }
                if (matcher.is_terminated()) {
                    EXPECT_TRUE(reference_matches(*grammar, generated)) << generated;
                }
            }
        }
    }
}

// Every string of up to 4 symbols is a token: every shape of trie path occurs.
TEST(GrammarMatcher, MasksEqualBruteForceOnExhaustiveVocabularies) {
    std::mt19937_64 rng(13);
    for (const GrammarCase& c : grammar_cases()) {
        auto grammar = parse_ebnf(c.ebnf);
        ASSERT_TRUE(grammar.ok());
        const std::string alphabet = alphabet_of(c.symbols);
        auto vocabulary = testing::exhaustive_vocabulary(alphabet, alphabet.size() > 5 ? 3 : 4);
        auto compiled = compile_or_die(*grammar, vocabulary);
        for (int run = 0; run < 6; ++run) {
            GrammarMatcher matcher(compiled);
            for (int step = 0; step < 12 && !matcher.is_terminated(); ++step) {
                const auto actual = fast_mask(matcher);
                ASSERT_EQ(mask_ids(actual), mask_ids(brute_force_mask(matcher)))
                    << c.name << " step " << step;
                const auto allowed = mask_ids(actual);
                ASSERT_FALSE(allowed.empty());
                ASSERT_TRUE(matcher.accept_token(allowed[rng() % allowed.size()]));
            }
        }
    }
}

// The whole mask (cached sets plus the uncertain tokens checked against the stack)
// equals trying every one of the 151,936 tokens, along random generations of a
// recursive JSON grammar on the real Qwen3 vocabulary.
TEST(GrammarMatcher, MasksEqualBruteForceOnQwen3) {
    auto grammar = parse_ebnf(R"g(root ::= value
        value ::= "{" (pair (", " pair)*)? "}" | "[" (value (", " value)*)? "]" | str | [0-9]{1,3} | "null"
        pair ::= str ": " value
        str ::= "\"" [a-z ]{0,6} "\"")g");
    ASSERT_TRUE(grammar.ok()) << grammar.error().message;
    auto compiled = compile_or_die(*grammar, testing::qwen3_vocabulary());
    std::mt19937_64 rng(17);
    int checked = 0;
    for (int run = 0; run < 8; ++run) {
        GrammarMatcher matcher(compiled);
        for (int step = 0; step < 12 && !matcher.is_terminated(); ++step) {
            const auto actual = fast_mask(matcher);
            if (step % 4 == run % 4) {
                ASSERT_EQ(mask_ids(actual), mask_ids(brute_force_mask(matcher)))
                    << "run " << run << " step " << step;
                ++checked;
            }
            auto allowed = mask_ids(actual);
            ASSERT_FALSE(allowed.empty());
            ASSERT_TRUE(matcher.accept_token(allowed[rng() % allowed.size()]));
        }
    }
    EXPECT_GE(checked, 6);
}

// A long bounded string inside a called rule: its character rule is called once per
// character, so a character state's own entry leaves almost every token uncertain
// and the matcher uses (state, return state) entries. Masks still equal brute force.
TEST(GrammarMatcher, PairEntriesOfCalledCharacterRulesEqualBruteForceOnQwen3) {
    auto grammar = parse_ebnf(R"g(root ::= "[" item (", " item){0,2} "]"
        item ::= "{\"k\": \"" ch{0,100} "\"}"
        ch ::= [a-z] | [ -!#-\[\]-\U0010FFFF] | "\\" (["\\/bfnrt] | "u" [0-9a-f]{4}))g");
    ASSERT_TRUE(grammar.ok()) << grammar.error().message;
    auto compiled = compile_or_die(*grammar, testing::qwen3_vocabulary());
    std::mt19937_64 rng(23);
    int checked = 0;
    for (int run = 0; run < 3; ++run) {
        GrammarMatcher matcher(compiled);
        ASSERT_TRUE(matcher.accept_bytes("[{\"k\": \"ab"));
        for (int step = 0; step < 9 && !matcher.is_terminated(); ++step) {
            const auto actual = fast_mask(matcher);
            if (step % 3 == run) {
                ASSERT_EQ(mask_ids(actual), mask_ids(brute_force_mask(matcher)))
                    << "run " << run << " step " << step;
                ++checked;
            }
            auto allowed = mask_ids(actual);
            ASSERT_FALSE(allowed.empty());
            ASSERT_TRUE(matcher.accept_token(allowed[rng() % allowed.size()]));
        }
    }
    EXPECT_GE(checked, 6);
    EXPECT_GT(compiled->mask_cache().num_pairs_computed(), 0);
}

TEST(GrammarMatcher, RollbackRestoresEarlierMasks) {
    auto grammar = parse_ebnf(R"g(root ::= "[" (item ("," item)*)? "]"
        item ::= "x" | root)g");
    ASSERT_TRUE(grammar.ok());
    auto vocabulary = random_vocabulary("[],x", 60, 3, 3);
    auto compiled = compile_or_die(*grammar, vocabulary);
    GrammarMatcher matcher(compiled);
    std::vector<std::vector<int32_t>> masks{mask_ids(fast_mask(matcher))};
    ASSERT_TRUE(matcher.accept_bytes("["));
    masks.push_back(mask_ids(fast_mask(matcher)));
    ASSERT_TRUE(matcher.accept_bytes("[x"));
    masks.push_back(mask_ids(fast_mask(matcher)));
    ASSERT_TRUE(matcher.accept_bytes(",x]"));
    EXPECT_FALSE(matcher.can_end());
    GrammarMatcher fork = matcher;
    ASSERT_TRUE(fork.accept_bytes("]"));
    EXPECT_TRUE(fork.can_end());
    EXPECT_FALSE(matcher.can_end()) << "a copy must not share state";
    EXPECT_FALSE(matcher.accept_bytes("]]"));
    EXPECT_EQ(matcher.num_accepted_tokens(), 3);
    matcher.rollback(1);
    EXPECT_EQ(mask_ids(fast_mask(matcher)), masks[2]);
    matcher.rollback(2);
    EXPECT_EQ(mask_ids(fast_mask(matcher)), masks[0]);
    EXPECT_EQ(matcher.num_accepted_tokens(), 0);
}

TEST(GrammarMatcher, EndTokenOnlyWhereTheGrammarMayEnd) {
    auto grammar = parse_ebnf(R"g(root ::= "ab" "c"?)g");
    ASSERT_TRUE(grammar.ok());
    auto vocabulary = random_vocabulary("abc", 20, 2, 4);
    const int32_t end = vocabulary->end_token_ids()[0];
    auto compiled = compile_or_die(*grammar, vocabulary);
    GrammarMatcher matcher(compiled);
    auto allows_end = [&] {
        auto ids = mask_ids(fast_mask(matcher));
        return std::find(ids.begin(), ids.end(), end) != ids.end();
    };
    EXPECT_FALSE(allows_end());
    EXPECT_FALSE(matcher.accept_token(end));
    ASSERT_TRUE(matcher.accept_bytes("ab"));
    EXPECT_TRUE(allows_end());
    ASSERT_TRUE(matcher.accept_bytes("c"));
    EXPECT_TRUE(allows_end());
    EXPECT_FALSE(matcher.can_continue());
    EXPECT_EQ(mask_ids(fast_mask(matcher)), std::vector<int32_t>{end});
    ASSERT_TRUE(matcher.accept_token(end));
    EXPECT_TRUE(matcher.is_terminated());
    EXPECT_TRUE(mask_ids(fast_mask(matcher)).empty());
    EXPECT_FALSE(matcher.accept_token(end));
}

}  // namespace
}  // namespace lmrun::structured
