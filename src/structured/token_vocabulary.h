// The model's vocabulary as constrained decoding sees it: the exact bytes each
// token id adds to the output, which ids end the sequence (EOS), and a byte trie
// over all text tokens so that one walk of an automaton state classifies the
// whole vocabulary (a subtree is skipped as soon as its prefix is rejected).
//
// Token bytes come from the tokenizer's own decoder, read for one token in the
// middle of a sequence: byte-level BPE pieces map back to their raw bytes (also
// when they are partial UTF-8), SentencePiece "<0xNN>" byte tokens to their byte,
// "▁" to a space. Special tokens and ids the tokenizer does not know (the padding
// rows of a model's embedding) carry no bytes: a grammar never allows them; EOS
// ids are allowed only where the grammar may end.
//
// The trie is stored flat in depth-first order: node i has a byte, a depth (1 =
// first byte of a token) and subtree_end, the index after its last descendant.
// Tokens longer than 65,535 bytes are left out (never allowed).
// Built once per engine and shared read-only by every compiled grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace lmrun {
class Tokenizer;
}

namespace lmrun::structured {

class TokenVocabulary {
  public:
    // vocab_size: rows of the model's logits (may exceed the tokenizer's ids).
    static Result<std::shared_ptr<const TokenVocabulary>> from_tokenizer(const Tokenizer& tokenizer,
                                                                         int64_t vocab_size,
                                                                         std::vector<int32_t> end_token_ids);
    // bytes[id] = the token's bytes; ids listed in `excluded` (and empty entries) are never allowed.
    static std::shared_ptr<const TokenVocabulary> from_token_bytes(std::vector<std::string> bytes,
                                                                   std::vector<int32_t> end_token_ids,
                                                                   const std::vector<int32_t>& excluded = {});

    int32_t vocab_size() const { return int32_t(token_bytes_.size()); }
    int32_t num_mask_words() const { return (vocab_size() + 31) / 32; }
    std::string_view token_bytes(int32_t id) const { return token_bytes_[size_t(id)]; }
    // A token with bytes that a grammar may allow (not special, not an end token).
    bool is_text_token(int32_t id) const { return trie_position_[size_t(id)] >= 0; }
    const std::vector<int32_t>& end_token_ids() const { return end_token_ids_; }
    bool is_end_token(int32_t id) const;
    size_t max_token_bytes() const { return max_token_bytes_; }

    // The trie, depth-first, one 16-byte node each so that a walk streams through memory.
    struct TrieNode {
        uint8_t byte;
        uint16_t depth;        // 1 = the first byte of a token
        int32_t subtree_end;   // index after the node's last descendant
        int32_t tokens_begin;  // tokens whose bytes end here: trie_tokens()[tokens_begin, tokens_end)
        int32_t tokens_end;
    };
    const std::vector<TrieNode>& trie() const { return trie_; }
    int32_t num_nodes() const { return int32_t(trie_.size()); }
    // Text tokens in trie order (sorted by bytes).
    const std::vector<int32_t>& trie_tokens() const { return trie_tokens_; }
    // Index of a text token in trie_tokens(), -1 for others.
    int32_t trie_position(int32_t id) const { return trie_position_[size_t(id)]; }
    // Bitmask of all text tokens.
    std::span<const uint32_t> text_token_mask() const { return text_token_mask_; }

  private:
    void build_trie(const std::vector<int32_t>& excluded);

    std::vector<std::string> token_bytes_;
    std::vector<int32_t> end_token_ids_;
    size_t max_token_bytes_ = 0;
    std::vector<TrieNode> trie_;
    std::vector<int32_t> trie_tokens_;
    std::vector<int32_t> trie_position_;
    std::vector<uint32_t> text_token_mask_;
};

}  // namespace lmrun::structured
