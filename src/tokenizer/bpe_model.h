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
#include "tokenizer/token_map.h"

namespace lmrun {

// The two big tables of a BPE model, extracted from the JSON separately because
// building them as a JSON DOM dominates load time (see tokenizer_json.h).
struct BpeTables {
    std::vector<std::pair<std::string, int64_t>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;  // in rank order
    std::string error;                                        // first malformed entry, if any
};
// From a DOM "model" object (used when the tables were not extracted by the reader).
Result<BpeTables> bpe_tables_from_json(const nlohmann::json& model);
// Splits a legacy "left right" merge line; false when it is not exactly two tokens.
bool split_merge_line(const std::string& line, std::pair<std::string, std::string>& merge);

class BpeModel {
  public:
    // `spec` is the "model" object; its vocab/merges are taken from `tables`.
    static Result<BpeModel> build(const nlohmann::json& spec, BpeTables tables);
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
    // Open-addressing (linear probing) map from a packed id pair to its merge:
    // one flat array instead of 151k hash nodes, for load time and lookup speed.
    class MergeTable {
      public:
        void reserve(size_t count);
        void insert_or_assign(uint64_t key, Merge merge);
        const Merge* find(uint64_t key) const;

      private:
        static constexpr uint64_t kEmpty = ~uint64_t{0};
        size_t slot_of(uint64_t key) const;
        std::vector<uint64_t> keys_;
        std::vector<Merge> values_;
        size_t mask_ = 0;
    };
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
    };
    static uint64_t pair_key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    Status load_vocab(std::vector<std::pair<std::string, int64_t>>& vocab);
    Status load_merges(const std::vector<std::pair<std::string, std::string>>& merges);
    std::vector<Symbol> initial_symbols(std::string_view piece) const;
    void merge_symbols(std::vector<Symbol>& symbols) const;
    std::vector<int32_t> encode_uncached(std::string_view piece) const;

    TokenMap vocab_;
    std::vector<std::string> id_to_token_;  // owns the strings vocab_ keys point to
    std::vector<bool> has_id_;
    MergeTable merges_;
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
