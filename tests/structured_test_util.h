// Helpers shared by the structured-output tests: an independent reference
// recognizer for Grammar (memoized recursive descent over bytes, nothing shared
// with the automaton), the brute-force token mask (try every token on a copy of
// the matcher), small synthetic vocabularies, and the real Qwen3 vocabulary.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/compiled_grammar.h"
#include "structured/grammar.h"
#include "structured/grammar_matcher.h"
#include "structured/token_vocabulary.h"

namespace lmrun::testing {

// Whether the whole of `text` is derived by the grammar's root (no left recursion).
bool reference_matches(const structured::Grammar& grammar, std::string_view text);

// Bit per token: accept_token succeeds on a copy of `matcher`.
std::vector<uint32_t> brute_force_mask(const structured::GrammarMatcher& matcher);
std::vector<uint32_t> fast_mask(structured::GrammarMatcher& matcher);
std::vector<int32_t> mask_ids(const std::vector<uint32_t>& mask);

// Every string over `alphabet` up to `max_length` bytes is a token, plus an end token (the last id).
std::shared_ptr<const structured::TokenVocabulary> exhaustive_vocabulary(const std::string& alphabet,
                                                                         int max_length);
// `count` random tokens of 1..max_length bytes drawn from `alphabet`, plus an end token (the last id).
std::shared_ptr<const structured::TokenVocabulary> random_vocabulary(const std::string& alphabet, int count,
                                                                     int max_length, uint64_t seed);

// The named JSON schemas of tests/structured/schemas.json, in file order: (name, schema).
std::vector<std::pair<std::string, nlohmann::ordered_json>> schema_corpus();

// The real Qwen3 vocabulary (151,936 rows), built once; EOS = <|im_end|>, <|endoftext|>.
std::shared_ptr<const structured::TokenVocabulary> qwen3_vocabulary();

struct ValidationResult {
    bool valid = false;
    std::string error;
};
// Each (schema, text) checked by tests/structured/validate_json.py: the text parses as
// JSON and validates (python3-jsonschema, formats checked).
std::vector<ValidationResult> validate_with_python(
    const std::vector<std::pair<nlohmann::ordered_json, std::string>>& records);

// A random generation: at each step a token drawn uniformly from the mask (an end
// token with probability `end_probability` where allowed). Returns the text;
// `terminated` tells whether an end token was accepted within max_steps.
std::string random_generation(structured::GrammarMatcher& matcher, std::mt19937_64& rng, int max_steps,
                              bool& terminated, double end_probability = 0.3);

// Compiles or fails the test.
std::shared_ptr<const structured::CompiledGrammar> compile_or_die(
    const structured::Grammar& grammar, std::shared_ptr<const structured::TokenVocabulary> vocabulary);

}  // namespace lmrun::testing
