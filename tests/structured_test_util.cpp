#include "structured_test_util.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace lmrun::testing {
namespace {

using structured::CodepointRange;
using structured::Expr;
using structured::ExprId;
using structured::ExprKind;
using structured::Grammar;

// Decodes one UTF-8 code point at text[pos]; length 0 if ill-formed.
std::pair<char32_t, size_t> decode(std::string_view text, size_t pos) {
    const unsigned char lead = static_cast<unsigned char>(text[pos]);
    size_t length = lead < 0x80             ? 1
                    : (lead & 0xE0) == 0xC0 ? 2
                    : (lead & 0xF0) == 0xE0 ? 3
                    : (lead & 0xF8) == 0xF0 ? 4
                                            : 0;
    if (length == 0 || pos + length > text.size()) return {0, 0};
    char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t i = 1; i < length; ++i) {
        const unsigned char next = static_cast<unsigned char>(text[pos + i]);
        if ((next & 0xC0) != 0x80) return {0, 0};
        cp = (cp << 6) | (next & 0x3F);
    }
    // Overlong forms and surrogates are not UTF-8.
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[length] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return {0, 0};
    return {cp, length};
}

class ReferenceRecognizer {
  public:
    ReferenceRecognizer(const Grammar& grammar, std::string_view text) : grammar_(grammar), text_(text) {}

    std::set<size_t> ends(ExprId id, size_t pos) {
        const auto key = std::make_pair(id, pos);
        if (auto found = memo_.find(key); found != memo_.end()) return found->second;
        memo_[key] = {};  // re-entry at the same position (nullable recursion) finds nothing
        std::set<size_t> result = compute(grammar_.expr(id), pos);
        memo_[key] = result;
        return result;
    }

  private:
    std::set<size_t> compute(const Expr& e, size_t pos) {
        std::set<size_t> out;
        switch (e.kind) {
            case ExprKind::Literal:
                if (text_.substr(pos, e.literal.size()) == e.literal) out.insert(pos + e.literal.size());
                break;
            case ExprKind::CharClass: {
                if (pos >= text_.size()) break;
                auto [cp, length] = decode(text_, pos);
                if (length == 0) break;
                for (CodepointRange range : e.ranges) {
                    if (cp >= range.first && cp <= range.last) out.insert(pos + length);
                }
                break;
            }
            case ExprKind::RuleRef:
                out = ends(grammar_.rule(e.rule).body, pos);
                break;
            case ExprKind::Sequence: {
                std::set<size_t> current{pos};
                for (ExprId child : e.children) {
                    std::set<size_t> next;
                    for (size_t p : current) {
                        for (size_t q : ends(child, p)) next.insert(q);
                    }
                    current = std::move(next);
                }
                out = std::move(current);
                break;
            }
            case ExprKind::Choice:
                for (ExprId child : e.children) {
                    for (size_t q : ends(child, pos)) out.insert(q);
                }
                break;
            case ExprKind::Repeat: {
                std::set<size_t> current{pos}, seen;
                if (e.min_repeat == 0) out.insert(pos);
                for (int32_t count = 1; e.max_repeat == structured::kUnbounded || count <= e.max_repeat;
                     ++count) {
                    std::set<size_t> next;
                    for (size_t p : current) {
                        for (size_t q : ends(e.children[0], p)) next.insert(q);
                    }
                    if (count >= e.min_repeat) out.insert(next.begin(), next.end());
                    // Past the minimum, positions seen before add nothing new.
                    if (count >= e.min_repeat) {
                        std::set<size_t> fresh;
                        for (size_t q : next) {
                            if (seen.insert(q).second) fresh.insert(q);
                        }
                        next = std::move(fresh);
                    }
                    if (next.empty()) break;
                    current = std::move(next);
                }
                break;
            }
        }
        return out;
    }

    const Grammar& grammar_;
    std::string_view text_;
    std::map<std::pair<ExprId, size_t>, std::set<size_t>> memo_;
};

std::shared_ptr<const structured::TokenVocabulary> with_end_token(std::vector<std::string> tokens) {
    const int32_t end_id = int32_t(tokens.size());
    tokens.emplace_back();  // the end token has no bytes
    return structured::TokenVocabulary::from_token_bytes(std::move(tokens), {end_id});
}

}  // namespace

bool reference_matches(const Grammar& grammar, std::string_view text) {
    ReferenceRecognizer recognizer(grammar, text);
    return recognizer.ends(grammar.rule(grammar.root()).body, 0).count(text.size()) > 0;
}

std::vector<uint32_t> brute_force_mask(const structured::GrammarMatcher& matcher) {
    const auto& vocabulary = matcher.vocabulary();
    std::vector<uint32_t> mask(size_t(vocabulary.num_mask_words()), 0);
    for (int32_t id = 0; id < vocabulary.vocab_size(); ++id) {
        structured::GrammarMatcher copy = matcher;
        if (copy.accept_token(id)) mask[size_t(id) / 32] |= 1u << (id % 32);
    }
    return mask;
}

std::vector<uint32_t> fast_mask(structured::GrammarMatcher& matcher) {
    std::vector<uint32_t> mask(size_t(matcher.vocabulary().num_mask_words()), 0xFFFFFFFFu);
    matcher.fill_next_token_bitmask(mask);
    return mask;
}

std::vector<int32_t> mask_ids(const std::vector<uint32_t>& mask) {
    std::vector<int32_t> ids;
    for (size_t w = 0; w < mask.size(); ++w) {
        for (int b = 0; b < 32; ++b) {
            if (mask[w] & (1u << b)) ids.push_back(int32_t(w * 32 + size_t(b)));
        }
    }
    return ids;
}

std::shared_ptr<const structured::TokenVocabulary> exhaustive_vocabulary(const std::string& alphabet,
                                                                         int max_length) {
    std::vector<std::string> tokens{""};
    std::vector<std::string> all;
    for (int length = 1; length <= max_length; ++length) {
        std::vector<std::string> next;
        for (const std::string& prefix : tokens) {
            for (char c : alphabet) next.push_back(prefix + c);
        }
        all.insert(all.end(), next.begin(), next.end());
        tokens = std::move(next);
    }
    return with_end_token(std::move(all));
}

std::shared_ptr<const structured::TokenVocabulary> random_vocabulary(const std::string& alphabet, int count,
                                                                     int max_length, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::string> tokens;
    for (char c : alphabet) tokens.emplace_back(1, c);  // every single byte is a token, as in real BPE
    while (int(tokens.size()) < count) {
        const int length = 1 + int(rng() % uint64_t(max_length));
        std::string token;
        for (int i = 0; i < length; ++i) token.push_back(alphabet[rng() % alphabet.size()]);
        tokens.push_back(std::move(token));
    }
    return with_end_token(std::move(tokens));
}

std::shared_ptr<const structured::TokenVocabulary> qwen3_vocabulary() {
    static const std::shared_ptr<const structured::TokenVocabulary> vocabulary = [] {
        auto tokenizer = Tokenizer::from_file(testdata_path("qwen3-tokenizer/tokenizer.json"));
        EXPECT_TRUE(tokenizer.ok());
        auto built = structured::TokenVocabulary::from_tokenizer(**tokenizer, 151936, {151645, 151643});
        EXPECT_TRUE(built.ok());
        return built.ok() ? built.value() : nullptr;
    }();
    return vocabulary;
}

std::vector<ValidationResult> validate_with_python(
    const std::vector<std::pair<nlohmann::ordered_json, std::string>>& records) {
    const std::string input = make_temp_dir("validate_json") + "/records.jsonl";
    {
        std::ofstream out(input);
        for (const auto& [schema, text] : records)
            out << nlohmann::ordered_json{{"schema", schema}, {"text", text}}.dump() << "\n";
    }
    const std::string command =
        std::string("python3 ") + LMRUN_SOURCE_DIR + "/tests/structured/validate_json.py " + input;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    if (!pipe) throw std::runtime_error("cannot run " + command);
    std::vector<ValidationResult> results;
    std::string line;
    for (int c; (c = fgetc(pipe.get())) != EOF;) {
        if (c != '\n') {
            line.push_back(char(c));
            continue;
        }
        auto parsed = nlohmann::json::parse(line);
        results.push_back({parsed["valid"].get<bool>(), parsed["error"].get<std::string>()});
        line.clear();
    }
    if (results.size() != records.size())
        throw std::runtime_error("the validator answered " + std::to_string(results.size()) + " of " +
                                 std::to_string(records.size()));
    return results;
}

std::string random_generation(structured::GrammarMatcher& matcher, std::mt19937_64& rng, int max_steps,
                              bool& terminated, double end_probability) {
    const auto& vocabulary = matcher.vocabulary();
    std::string text;
    terminated = false;
    for (int step = 0; step < max_steps; ++step) {
        const std::vector<int32_t> allowed = mask_ids(fast_mask(matcher));
        std::vector<int32_t> text_tokens, end_tokens;
        for (int32_t id : allowed) (vocabulary.is_end_token(id) ? end_tokens : text_tokens).push_back(id);
        if (!end_tokens.empty() &&
            (text_tokens.empty() || std::uniform_real_distribution<double>(0, 1)(rng) < end_probability)) {
            terminated = matcher.accept_token(end_tokens[0]);
            return text;
        }
        if (text_tokens.empty()) return text;  // a dead end: the caller's check fails
        const int32_t token = text_tokens[rng() % text_tokens.size()];
        if (!matcher.accept_token(token)) return text;
        text += vocabulary.token_bytes(token);
    }
    return text;
}

std::shared_ptr<const structured::CompiledGrammar> compile_or_die(
    const Grammar& grammar, std::shared_ptr<const structured::TokenVocabulary> vocabulary) {
    auto compiled = structured::CompiledGrammar::compile(grammar, std::move(vocabulary));
    EXPECT_TRUE(compiled.ok()) << (compiled.ok() ? "" : compiled.error().message);
    if (!compiled.ok()) throw std::runtime_error(compiled.error().message);
    return compiled.value();
}

std::vector<std::pair<std::string, nlohmann::ordered_json>> schema_corpus() {
    std::ifstream in(std::string(LMRUN_SOURCE_DIR) + "/tests/structured/schemas.json");
    std::vector<std::pair<std::string, nlohmann::ordered_json>> out;
    for (const nlohmann::ordered_json& entry : nlohmann::ordered_json::parse(in))
        out.emplace_back(entry["name"].get<std::string>(), entry["schema"]);
    return out;
}

}  // namespace lmrun::testing
