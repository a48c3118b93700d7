// tokenizer.json "model" of type BPE: vocab (token string -> id), merges ranked by
// their position in the file, optional byte_fallback (<0xNN> tokens for chars not in
// the vocab), unk token (optionally fused), continuing-subword prefix and end-of-word
// suffix. encode_piece() applies merges lowest rank first (ties: leftmost), exactly
// like HF's Word::merge_all, using a heap over a linked list of symbols, so a piece
// of n chars costs O(n log n). Results for short pieces are cached.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"

namespace lmrun {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
public:
    static Result<BpeModel> from_json(const nlohmann::json& spec);
    BpeModel() = default;
    BpeModel(BpeModel&& other) noexcept;
    BpeModel& operator=(BpeModel&& other) noexcept;

    // Appends the ids of one pre-tokenized piece.
    void encode_piece(std::string_view piece, std::vector<int32_t>& ids) const;
    std::optional<int32_t> token_to_id(std::string_view token) const;
    // The vocab string of `id`, or nullptr if the vocab has no such id.
    const std::string* id_to_token(int32_t id) const;
    // Highest id in the vocab + 1.
    int32_t num_ids() const { return static_cast<int32_t>(id_to_token_.size()); }

private:
    struct Merge {
        int32_t rank;
        int32_t new_id;
    };
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    Status load_vocab(const nlohmann::json& vocab);
    Status load_merges(const nlohmann::json& merges);
    std::vector<Symbol> initial_symbols(std::string_view piece) const;
    void merge_symbols(std::vector<Symbol>& symbols) const;
    std::vector<int32_t> encode_uncached(std::string_view piece) const;

    TokenIdMap vocab_;
    std::vector<std::string> id_to_token_;
    std::unordered_map<uint64_t, Merge> merges_;
    std::optional<int32_t> unk_id_;
    bool fuse_unk_ = false;
    bool byte_fallback_ = false;
    bool ignore_merges_ = false;
    std::string continuing_subword_prefix_;
    std::string end_of_word_suffix_;
    std::vector<int32_t> byte_token_ids_;  // <0xNN> id per byte, -1 if absent

    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace lmrun
