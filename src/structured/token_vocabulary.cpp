#include "structured/token_vocabulary.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lmrun::structured {
namespace {

// The raw bytes behind a byte-level BPE piece, if every character of it is one
// of the 256 byte stand-ins.
std::optional<std::string> byte_level_bytes(const std::string& piece) {
    std::string bytes;
    for (size_t pos = 0; pos < piece.size();) {
        auto byte = byte_level::char_to_byte(unicode::next_code_point(piece, pos));
        if (!byte) return std::nullopt;
        bytes.push_back(static_cast<char>(*byte));
    }
    return bytes;
}

// "<0xNN>" -> the byte NN.
std::optional<std::string> fallback_byte(const std::string& piece) {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return std::nullopt;
    int value = 0;
    for (size_t i = 3; i < 5; ++i) {
        const char c = piece[i];
        const int digit = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                 : -1;
        if (digit < 0) return std::nullopt;
        value = value * 16 + digit;
    }
    return std::string(1, static_cast<char>(value));
}

// What token `id` adds to the text when it follows other tokens.
std::string token_text_bytes(const Tokenizer& tokenizer, int32_t id) {
    const int32_t one[] = {id};
    std::string decoded = tokenizer.decode_chunk(one, /*skip_special_tokens=*/false,
                                                 /*at_sequence_start=*/false);
    const std::string piece = tokenizer.id_to_token(id);
    if (auto raw = byte_level_bytes(piece); raw && unicode::utf8_lossy(*raw) == decoded) return *raw;
    if (tokenizer.is_fallback_byte(id)) {
        if (auto byte = fallback_byte(piece)) return *byte;
    }
    return decoded;
}

}  // namespace

Result<std::shared_ptr<const TokenVocabulary>> TokenVocabulary::from_tokenizer(
    const Tokenizer& tokenizer, int64_t vocab_size, std::vector<int32_t> end_token_ids) {
    if (vocab_size <= 0) return make_error("vocabulary size must be positive, got {}", vocab_size);
    std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
    std::vector<int32_t> excluded;
    const int32_t known = std::min<int32_t>(tokenizer.vocab_size(), int32_t(vocab_size));
    for (int32_t id = 0; id < known; ++id) {
        if (!tokenizer.decodes_to_token(id, /*skip_special_tokens=*/false)) continue;
        if (tokenizer.is_special(id)) {
            excluded.push_back(id);
            continue;
        }
        bytes[size_t(id)] = token_text_bytes(tokenizer, id);
    }
    return from_token_bytes(std::move(bytes), std::move(end_token_ids), excluded);
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_token_bytes(
    std::vector<std::string> bytes, std::vector<int32_t> end_token_ids,
    const std::vector<int32_t>& excluded) {
    auto vocabulary = std::shared_ptr<TokenVocabulary>(new TokenVocabulary());
    vocabulary->token_bytes_ = std::move(bytes);
    const int32_t size = vocabulary->vocab_size();
    std::erase_if(end_token_ids, [&](int32_t id) { return id < 0 || id >= size; });
    std::sort(end_token_ids.begin(), end_token_ids.end());
    end_token_ids.erase(std::unique(end_token_ids.begin(), end_token_ids.end()), end_token_ids.end());
    vocabulary->end_token_ids_ = std::move(end_token_ids);
    vocabulary->build_trie(excluded);
    return vocabulary;
}

bool TokenVocabulary::is_end_token(int32_t id) const {
    return std::binary_search(end_token_ids_.begin(), end_token_ids_.end(), id);
}

void TokenVocabulary::build_trie(const std::vector<int32_t>& excluded) {
    const int32_t size = vocab_size();
    std::vector<bool> skip(size_t(size), false);
    for (int32_t id : excluded) {
        if (id >= 0 && id < size) skip[size_t(id)] = true;
    }
    for (int32_t id : end_token_ids_) skip[size_t(id)] = true;
    for (int32_t id = 0; id < size; ++id) {
        const size_t length = token_bytes_[size_t(id)].size();
        if (!skip[size_t(id)] && length > 0 && length <= UINT16_MAX) trie_tokens_.push_back(id);
    }
    std::sort(trie_tokens_.begin(), trie_tokens_.end(), [&](int32_t a, int32_t b) {
        const std::string& x = token_bytes_[size_t(a)];
        const std::string& y = token_bytes_[size_t(b)];
        return x != y ? x < y : a < b;
    });
    trie_position_.assign(size_t(size), -1);
    text_token_mask_.assign(size_t(num_mask_words()), 0);
    std::vector<int32_t> path;  // node index per depth - 1
    std::string_view previous;
    for (size_t k = 0; k < trie_tokens_.size(); ++k) {
        const int32_t id = trie_tokens_[k];
        trie_position_[size_t(id)] = int32_t(k);
        text_token_mask_[size_t(id) / 32] |= 1u << (id % 32);
        const std::string_view bytes = token_bytes_[size_t(id)];
        max_token_bytes_ = std::max(max_token_bytes_, bytes.size());
        size_t common = 0;
        while (common < bytes.size() && common < previous.size() && bytes[common] == previous[common])
            ++common;
        while (path.size() > common) {
            trie_[size_t(path.back())].subtree_end = num_nodes();
            path.pop_back();
        }
        for (size_t depth = common; depth < bytes.size(); ++depth) {
            path.push_back(num_nodes());
            trie_.push_back(TrieNode{static_cast<uint8_t>(bytes[depth]), uint16_t(depth + 1), -1, int32_t(k),
                                     int32_t(k)});
        }
        // Sorted order puts every token that ends at this node right here, before any longer one.
        trie_[size_t(path.back())].tokens_end = int32_t(k + 1);
        previous = bytes;
    }
    while (!path.empty()) {
        trie_[size_t(path.back())].subtree_end = num_nodes();
        path.pop_back();
    }
}

}  // namespace lmrun::structured
