// The EBNF (GBNF-style) grammar reader: the syntax it accepts, printing a grammar
// and reading it back gives the same language, and every syntax error names its
// line and column.
#include "structured/ebnf_parser.h"

#include <gtest/gtest.h>

#include "structured/pushdown_automaton.h"
#include "structured_test_util.h"

namespace lmrun::structured {
namespace {

TEST(EbnfParser, ReadsGbnfSyntax) {
    auto grammar = parse_ebnf(R"g(
        # comments and line breaks anywhere
        root ::= "{" ws pair ("," ws pair)* "}"   # a rule runs until the next `name ::=`
        pair ::= string ":" ws [0-9]+
        string ::= "\"" [^"\\\x00-\x1F]{1,5} "\"" | 'single quoted'
        ws ::= [ \t\n]{0,2}
        unused-rule ::= . | "\u00e9" | "\U0001F600" | "a"{2} "b"{1,} "c"? | ()
    )g");
    ASSERT_TRUE(grammar.ok()) << grammar.error().message;
    EXPECT_EQ(grammar->rule(grammar->root()).name, "root");
    EXPECT_EQ(grammar->num_rules(), 5);
    EXPECT_TRUE(testing::reference_matches(*grammar, "{\"ab\":1,\n\"c\": 23}"));
    EXPECT_TRUE(testing::reference_matches(*grammar, "{single quoted:7}"));
    EXPECT_FALSE(testing::reference_matches(*grammar, "{\"\":1}"));
}

TEST(EbnfParser, PrintedGrammarReadsBackToTheSameLanguage) {
    auto grammar = parse_ebnf(R"g(root ::= (item ("," item)*)? "."
        item ::= [a-c\-\]]+ "x"{2,3} | "q\"\\" | [^\n]? "z"*)g");
    ASSERT_TRUE(grammar.ok()) << grammar.error().message;
    auto reread = parse_ebnf(grammar->to_ebnf());
    ASSERT_TRUE(reread.ok()) << reread.error().message << "\n" << grammar->to_ebnf();
    for (const char* text :
         {".", "a-]xx.", "q\"\\,axxx.", "zzz,bxx.", "é.", "axxxx.", "q\".", "a,.", "\n."}) {
        EXPECT_EQ(testing::reference_matches(*grammar, text), testing::reference_matches(*reread, text))
            << text;
    }
}

TEST(EbnfParser, SyntaxErrorsNameLineAndColumn) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {"", "empty"},
        {"root ::= \"a\"\nbad ::= \"b", "line 2, column 11: unterminated string literal"},
        {"root ::= missing", "line 1, column 10: undefined rule 'missing'"},
        {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
        {"start ::= \"a\"", "no rule named 'root'"},
        {"root ::= (\"a\"", "line 1, column 14: expected ')'"},
        {"root ::= [a-", "unterminated character class"},
        {"root ::= [z-a]", "reversed"},
        {"root ::= \"a\"{3,1}", "maximum below its minimum"},
        {"root ::= \"\\q\"", "unknown escape"},
        {"root = \"a\"", "expected '::='"},
        {"root ::= \"a\" )", "unexpected ')'"},
        {"root ::= \"a\"{1000000}", "repetition count above"},
    };
    for (const auto& [text, expected] : cases) {
        auto grammar = parse_ebnf(text);
        ASSERT_FALSE(grammar.ok()) << text;
        EXPECT_NE(grammar.error().message.find(expected), std::string::npos)
            << text << ": " << grammar.error().message;
    }
}

TEST(EbnfParser, DeepNestingIsAnErrorNotACrash) {
    std::string text = "root ::= " + std::string(10000, '(') + "\"a\"" + std::string(10000, ')');
    auto grammar = parse_ebnf(text);
    ASSERT_FALSE(grammar.ok());
    EXPECT_NE(grammar.error().message.find("nested deeper"), std::string::npos);
}

TEST(PushdownAutomaton, RejectsGrammarsThatCannotWork) {
    const std::vector<std::pair<const char*, const char*>> cases = {
        {"root ::= root \"a\" | \"b\"", "left-recursive"},
        {"root ::= x\nx ::= y \"a\" | \"b\"\ny ::= \"\" | x", "left-recursive"},
        {"root ::= \"a\" root", "matches no string"},
        {"root ::= [^\\x00-\\U0010FFFF]", "matches no string"},
    };
    for (const auto& [text, expected] : cases) {
        auto grammar = parse_ebnf(text);
        ASSERT_TRUE(grammar.ok()) << text << ": " << grammar.error().message;
        auto automaton = PushdownAutomaton::build(*grammar);
        ASSERT_FALSE(automaton.ok()) << text;
        EXPECT_NE(automaton.error().message.find(expected), std::string::npos) << automaton.error().message;
    }
}

TEST(PushdownAutomaton, HugeRepetitionsAreResourceErrors) {
    auto grammar = parse_ebnf("root ::= [a-z]{5000} [0-9]{5000}");
    ASSERT_TRUE(grammar.ok());
    AutomatonLimits small;
    small.max_dfa_states = 8000;
    auto automaton = PushdownAutomaton::build(*grammar, small);
    ASSERT_FALSE(automaton.ok());
    EXPECT_EQ(automaton.error().kind, ErrorKind::ResourceExhausted);
    small.max_nfa_states = 8000;
    small.max_dfa_states = 400000;
    automaton = PushdownAutomaton::build(*grammar, small);
    ASSERT_FALSE(automaton.ok());
    EXPECT_EQ(automaton.error().kind, ErrorKind::ResourceExhausted);
    EXPECT_TRUE(PushdownAutomaton::build(*grammar).ok());
}

}  // namespace
}  // namespace lmrun::structured
