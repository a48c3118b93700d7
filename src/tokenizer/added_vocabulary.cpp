#include "tokenizer/added_vocabulary.h"

#include <nlohmann/json.hpp>

#include "tokenizer/token_map.h"
#include "tokenizer/unicode.h"

namespace lmrun {

namespace {

size_t previous_char_start(std::string_view text, size_t pos) {
    do {
        --pos;
    } while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80);
    return pos;
}

char32_t char_before(std::string_view text, size_t pos) {
    size_t start = previous_char_start(text, pos);
    return unicode::next_code_point(text, start);
}

}  // namespace

Result<AddedVocabulary> AddedVocabulary::from_json(const nlohmann::json& added_tokens) {
    AddedVocabulary vocabulary;
    if (added_tokens.is_null()) return vocabulary;
    if (!added_tokens.is_array()) return make_error("\"added_tokens\" must be an array");
    vocabulary.raw_trie_.emplace_back();
    vocabulary.normalized_trie_.emplace_back();
    for (const auto& entry : added_tokens) {
        if (!entry.is_object() || !entry.contains("id") || !entry.contains("content") ||
            !entry["content"].is_string())
            return make_error("added_tokens: entry {} needs an integer \"id\" and a string \"content\"",
                              vocabulary.tokens_.size());
        const nlohmann::json& id = entry["id"];
        // Range-checked as a 64-bit value: get<int32_t>() would wrap 4294967296 to 0.
        if (!id.is_number_integer() ||
            (id.is_number_unsigned() && id.get<uint64_t>() >= uint64_t(kMaxTokenIds)) ||
            id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxTokenIds)
            return make_error("added token {} has id {}, out of range [0, {})", entry["content"].dump(),
                              id.dump(), kMaxTokenIds);
        AddedToken token;
        token.id = static_cast<int32_t>(id.get<int64_t>());
        token.content = entry["content"].get<std::string>();
        token.single_word = entry.value("single_word", false);
        token.lstrip = entry.value("lstrip", false);
        token.rstrip = entry.value("rstrip", false);
        token.special = entry.value("special", false);
        token.normalized = entry.value("normalized", !token.special);
        if (token.content.empty()) return make_error("added token {} has empty content", token.id);
        if (!unicode::is_valid_utf8(token.content))
            return make_error("added token {} is not UTF-8", token.id);
        if (!token.normalized) add_to_trie(vocabulary.raw_trie_, token.content, token.id);
        vocabulary.index_by_id_[token.id] = vocabulary.tokens_.size();
        vocabulary.tokens_.push_back(std::move(token));
    }
    return vocabulary;
}

void AddedVocabulary::add_to_trie(std::vector<TrieNode>& trie, std::string_view content, int32_t id) {
    if (trie.empty()) trie.emplace_back();
    if (content.empty()) return;
    int32_t node = 0;
    for (char c : content) {
        const auto byte = static_cast<unsigned char>(c);
        auto it = trie[node].children.find(byte);
        if (it == trie[node].children.end()) {
            trie.emplace_back();
            it = trie[node].children.emplace(byte, static_cast<int32_t>(trie.size() - 1)).first;
        }
        node = it->second;
    }
    // The first token with a given content wins, as in HF's token map.
    if (trie[node].token_id < 0) trie[node].token_id = id;
}

std::optional<std::pair<int32_t, size_t>> AddedVocabulary::longest_match(const std::vector<TrieNode>& trie,
                                                                         std::string_view text, size_t pos) {
    std::optional<std::pair<int32_t, size_t>> best;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        const auto it = trie[node].children.find(static_cast<unsigned char>(text[i]));
        if (it == trie[node].children.end()) break;
        node = it->second;
        if (trie[node].token_id >= 0) best = std::make_pair(trie[node].token_id, i + 1);
    }
    return best;
}

bool AddedVocabulary::accept_match(const AddedToken& token, std::string_view text, size_t& begin, size_t& end,
                                   size_t floor) const {
    if (token.single_word) {
        const bool word_before = begin > 0 && unicode::is_alphanumeric(char_before(text, begin));
        size_t after = end;
        const bool word_after =
            end < text.size() && unicode::is_alphanumeric(unicode::next_code_point(text, after));
        if (word_before || word_after) return false;
    }
    if (token.lstrip) {
        while (begin > floor && unicode::is_whitespace(char_before(text, begin))) {
            begin = previous_char_start(text, begin);
        }
    }
    if (token.rstrip) {
        while (end < text.size()) {
            size_t next = end;
            if (!unicode::is_whitespace(unicode::next_code_point(text, next))) break;
            end = next;
        }
    }
    return true;
}

std::vector<TextSplit> AddedVocabulary::split(std::string_view text, bool normalized) const {
    const std::vector<TrieNode>& trie = normalized ? normalized_trie_ : raw_trie_;
    std::vector<TextSplit> splits;
    if (trie.empty() || trie[0].children.empty()) {
        if (!text.empty()) splits.push_back({std::string(text), std::nullopt});
        return splits;
    }
    size_t copied = 0;  // end of the text already emitted
    size_t pos = 0;
    while (pos < text.size()) {
        const auto match = longest_match(trie, text, pos);
        if (!match) {
            ++pos;
            continue;
        }
        size_t begin = pos;
        size_t end = match->second;
        const AddedToken& token = tokens_[index_by_id_.at(match->first)];
        if (!accept_match(token, text, begin, end, copied)) {
            pos = match->second;
            continue;
        }
        if (begin > copied)
            splits.push_back({std::string(text.substr(copied, begin - copied)), std::nullopt});
        splits.push_back({std::string(text.substr(begin, end - begin)), token.id});
        copied = end;
        pos = end;
    }
    if (copied < text.size()) splits.push_back({std::string(text.substr(copied)), std::nullopt});
    return splits;
}

const AddedToken* AddedVocabulary::find_by_id(int32_t id) const {
    const auto it = index_by_id_.find(id);
    return it == index_by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::find_by_content(std::string_view content) const {
    for (const AddedToken& token : tokens_) {
        if (token.content == content) return token.id;
    }
    return std::nullopt;
}

}  // namespace lmrun
