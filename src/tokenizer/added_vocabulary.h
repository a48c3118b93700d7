// tokenizer.json "added_tokens": tokens matched verbatim in the input before the
// model sees it (leftmost match, longest at that position), each becoming one id.
// Tokens with normalized=false match the raw text; normalized=true ones match the
// normalized text of the pieces in between. lstrip/rstrip extend a match over
// adjacent whitespace; single_word rejects matches inside a word.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"

namespace lmrun {

struct AddedToken {
    int32_t id = 0;
    std::string content;
    bool single_word = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    bool special = false;
};

// A piece of input: either plain text (token_id empty) or one added token.
struct TextSplit {
    std::string text;
    std::optional<int32_t> token_id;
};

class AddedVocabulary {
  public:
    static Result<AddedVocabulary> from_json(const nlohmann::json& added_tokens);

    // Splits `text` at the tokens whose `normalized` flag equals `normalized`.
    std::vector<TextSplit> split(std::string_view text, bool normalized) const;
    bool has_normalized_tokens() const {
        for (const AddedToken& token : tokens_) {
            if (token.normalized) return true;
        }
        return false;
    }
    // Replaces the match strings of normalized=true tokens (they match the normalized text).
    template <typename NormalizeFn>
    void normalize_contents(NormalizeFn&& normalize) {
        normalized_trie_.clear();
        for (const AddedToken& token : tokens_) {
            if (token.normalized) add_to_trie(normalized_trie_, normalize(token.content), token.id);
        }
    }

    const AddedToken* find_by_id(int32_t id) const;
    std::optional<int32_t> find_by_content(std::string_view content) const;
    const std::vector<AddedToken>& tokens() const { return tokens_; }

  private:
    struct TrieNode {
        std::unordered_map<unsigned char, int32_t> children;
        int32_t token_id = -1;
    };
    static void add_to_trie(std::vector<TrieNode>& trie, std::string_view content, int32_t id);
    // Longest token starting at `pos`: (token id, end) or nothing.
    static std::optional<std::pair<int32_t, size_t>> longest_match(const std::vector<TrieNode>& trie,
                                                                   std::string_view text, size_t pos);
    bool accept_match(const AddedToken& token, std::string_view text, size_t& begin, size_t& end,
                      size_t floor) const;

    std::vector<AddedToken> tokens_;
    std::unordered_map<int32_t, size_t> index_by_id_;
    std::vector<TrieNode> raw_trie_;
    std::vector<TrieNode> normalized_trie_;
};

}  // namespace lmrun
