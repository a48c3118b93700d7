#include "tokenizer/bpe_model.h"

#include <queue>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace lmrun {

namespace {

constexpr size_t kMaxCachedPieceBytes = 256;
constexpr size_t kMaxCacheEntries = 50000;

std::string optional_string(const nlohmann::json& spec, const char* key) {
    if (!spec.contains(key) || spec[key].is_null()) return {};
    return spec[key].get<std::string>();
}

size_t utf8_char_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead < 0xE0) return 2;
    if (lead < 0xF0) return 3;
    return 4;
}

}  // namespace

BpeModel::BpeModel(BpeModel&& other) noexcept {
    *this = std::move(other);
}

BpeModel& BpeModel::operator=(BpeModel&& other) noexcept {
    vocab_ = std::move(other.vocab_);
    id_to_token_ = std::move(other.id_to_token_);
    has_id_ = std::move(other.has_id_);
    vocab_.rebind(id_to_token_);
    merges_ = std::move(other.merges_);
    unk_id_ = other.unk_id_;
    fuse_unk_ = other.fuse_unk_;
    byte_fallback_ = other.byte_fallback_;
    ignore_merges_ = other.ignore_merges_;
    continuing_subword_prefix_ = std::move(other.continuing_subword_prefix_);
    end_of_word_suffix_ = std::move(other.end_of_word_suffix_);
    byte_token_ids_ = std::move(other.byte_token_ids_);
    return *this;
}

bool split_merge_line(const std::string& line, std::pair<std::string, std::string>& merge) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) return false;
    merge = {line.substr(0, space), line.substr(space + 1)};
    return true;
}

Result<BpeTables> bpe_tables_from_json(const nlohmann::json& model) {
    BpeTables tables;
    if (!model.is_object() || !model.contains("vocab") || !model["vocab"].is_object()) {
        return make_error("model.vocab is missing or not an object");
    }
    if (!model.contains("merges") || !model["merges"].is_array()) {
        return make_error("model.merges is missing or not an array");
    }
    for (const auto& [token, id] : model["vocab"].items()) {
        if (!id.is_number_integer()) return make_error("model.vocab['{}'] is not an integer id", token);
        tables.vocab.emplace_back(token, id.get<int64_t>());
    }
    const auto& merges = model["merges"];
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        std::pair<std::string, std::string> merge;
        const auto& entry = merges[rank];
        const bool ok = entry.is_string() ? split_merge_line(entry.get<std::string>(), merge)
                                          : entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
                                                entry[1].is_string();
        if (!ok) return make_error("model.merges[{}] is neither \"a b\" nor [a, b]: {}", rank, entry.dump());
        if (entry.is_array()) merge = {entry[0].get<std::string>(), entry[1].get<std::string>()};
        tables.merges.push_back(std::move(merge));
    }
    return tables;
}

Result<BpeModel> BpeModel::from_json(const nlohmann::json& spec) {
    if (!spec.is_object()) return make_error("\"model\" is missing or not an object");
    if (spec.value("type", std::string("BPE")) != "BPE") return build(spec, BpeTables());
    LMRUN_ASSIGN_OR_RETURN(BpeTables tables, bpe_tables_from_json(spec));
    return build(spec, std::move(tables));
}

Result<BpeModel> BpeModel::build(const nlohmann::json& spec, BpeTables tables) {
    if (!spec.is_object()) return make_error("\"model\" is missing or not an object");
    const std::string type = spec.value("type", std::string("BPE"));
    if (type != "BPE")
        return make_error(ErrorKind::Unsupported, "unsupported model type '{}' (only BPE is implemented)",
                          type);
    if (!tables.error.empty()) return make_error("{}", tables.error);
    if (spec.contains("dropout") && spec["dropout"].is_number() && spec["dropout"].get<double>() > 0.0) {
        return make_error(ErrorKind::Unsupported, "BPE dropout is not supported");
    }
    BpeModel model;
    model.fuse_unk_ = spec.value("fuse_unk", false);
    model.byte_fallback_ = spec.value("byte_fallback", false);
    model.ignore_merges_ = spec.value("ignore_merges", false);
    model.continuing_subword_prefix_ = optional_string(spec, "continuing_subword_prefix");
    model.end_of_word_suffix_ = optional_string(spec, "end_of_word_suffix");
    LMRUN_RETURN_IF_ERROR(model.load_vocab(tables.vocab));
    LMRUN_RETURN_IF_ERROR(model.load_merges(tables.merges));
    const std::string unk_token = optional_string(spec, "unk_token");
    if (!unk_token.empty()) {
        model.unk_id_ = model.token_to_id(unk_token);
        if (!model.unk_id_) return make_error("unk_token '{}' is not in the vocab", unk_token);
    }
    model.byte_token_ids_.assign(256, -1);
    for (int byte = 0; byte < 256; ++byte) {
        if (auto id = model.token_to_id(fmt::format("<0x{:02X}>", byte))) model.byte_token_ids_[byte] = *id;
    }
    return model;
}

Status BpeModel::load_vocab(std::vector<std::pair<std::string, int64_t>>& vocab) {
    int32_t max_id = -1;
    for (const auto& [token, id] : vocab) {
        if (id < 0 || id >= kMaxTokenIds)
            return make_error("model.vocab: id {} of '{}' is out of range [0, {})", id, token, kMaxTokenIds);
        max_id = std::max(max_id, static_cast<int32_t>(id));
    }
    id_to_token_.assign(static_cast<size_t>(max_id) + 1, std::string());
    has_id_.assign(static_cast<size_t>(max_id) + 1, false);
    for (auto& [token, id] : vocab) {
        if (has_id_[id]) return make_error("model.vocab: id {} is used twice", id);
        has_id_[id] = true;
        id_to_token_[id] = std::move(token);
    }
    vocab_.build(id_to_token_, has_id_);
    return ok_status();
}

void BpeModel::MergeTable::reserve(size_t count) {
    size_t capacity = 16;
    while (capacity < count * 2) capacity *= 2;
    keys_.assign(capacity, kEmpty);
    values_.assign(capacity, Merge{0, 0});
    mask_ = capacity - 1;
}

size_t BpeModel::MergeTable::slot_of(uint64_t key) const {
    // Fibonacci hashing spreads the packed (left, right) ids over the table.
    size_t slot = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
    while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask_;
    return slot;
}

void BpeModel::MergeTable::insert_or_assign(uint64_t key, Merge merge) {
    const size_t slot = slot_of(key);
    keys_[slot] = key;
    values_[slot] = merge;
}

const BpeModel::Merge* BpeModel::MergeTable::find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    const size_t slot = slot_of(key);
    return keys_[slot] == key ? &values_[slot] : nullptr;
}

Status BpeModel::load_merges(const std::vector<std::pair<std::string, std::string>>& merges) {
    merges_.reserve(merges.size());  // fixed capacity: every insert fits
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        // As in HF, the right part's continuing-subword prefix is dropped from the merged token.
        const size_t prefix_length = std::min(continuing_subword_prefix_.size(), right.size());
        joined.assign(left).append(right, prefix_length);
        const auto left_id = token_to_id(left);
        const auto right_id = token_to_id(right);
        const auto new_id = token_to_id(joined);
        if (!left_id || !right_id || !new_id) {
            return make_error("model.merges[{}]: '{}' + '{}' uses a token missing from the vocab", rank, left,
                              right);
        }
        merges_.insert_or_assign(pair_key(*left_id, *right_id), Merge{static_cast<int32_t>(rank), *new_id});
    }
    return ok_status();
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
    return vocab_.find(token);
}

const std::string* BpeModel::id_to_token(int32_t id) const {
    if (id < 0 || id >= num_ids()) return nullptr;
    return has_id_[id] ? &id_to_token_[id] : nullptr;
}

std::vector<BpeModel::Symbol> BpeModel::initial_symbols(std::string_view piece) const {
    std::vector<Symbol> symbols;
    symbols.reserve(piece.size());
    auto push = [&symbols](int32_t id) {
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back({id, index - 1, index + 1});
    };
    int32_t pending_unk = -1;  // an unk not yet pushed (fused unks grow it)
    std::string key;
    for (size_t pos = 0; pos < piece.size();) {
        const size_t length =
            std::min(utf8_char_length(static_cast<unsigned char>(piece[pos])), piece.size() - pos);
        const std::string_view character = piece.substr(pos, length);
        const bool is_first = pos == 0;
        pos += length;
        const bool is_last = pos == piece.size();
        key.assign(is_first ? "" : continuing_subword_prefix_);
        key.append(character);
        if (is_last) key.append(end_of_word_suffix_);
        if (const auto id = token_to_id(key)) {
            if (pending_unk >= 0) push(pending_unk);
            pending_unk = -1;
            push(*id);
            continue;
        }
        if (byte_fallback_) {
            bool all_bytes_known = true;
            for (char byte : key) all_bytes_known &= byte_token_ids_[static_cast<unsigned char>(byte)] >= 0;
            if (all_bytes_known) {
                for (char byte : key) push(byte_token_ids_[static_cast<unsigned char>(byte)]);
                continue;
            }
        }
        if (unk_id_) {
            if (pending_unk >= 0 && !fuse_unk_) push(pending_unk);
            pending_unk = *unk_id_;
        }
    }
    if (pending_unk >= 0) push(pending_unk);
    if (!symbols.empty()) symbols.back().next = -1;
    return symbols;
}

void BpeModel::merge_symbols(std::vector<Symbol>& symbols) const {
    struct Candidate {
        int32_t rank;
        int32_t pos;
        int32_t new_id;
        bool operator>(const Candidate& other) const {
            return rank != other.rank ? rank > other.rank : pos > other.pos;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    auto push_pair = [&](int32_t pos) {
        const int32_t next = symbols[pos].next;
        if (next < 0) return;
        if (const Merge* merge = merges_.find(pair_key(symbols[pos].id, symbols[next].id))) {
            queue.push({merge->rank, pos, merge->new_id});
        }
    };
    for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);
    constexpr int32_t kRemoved = -2;
    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& left = symbols[top.pos];
        if (left.prev == kRemoved || left.next < 0) continue;
        const Symbol right = symbols[left.next];
        // Skip stale entries: the pair at pos changed since it was queued.
        const Merge* merge = merges_.find(pair_key(left.id, right.id));
        if (merge == nullptr || merge->new_id != top.new_id) continue;
        symbols[left.next].prev = kRemoved;
        left.id = top.new_id;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = top.pos;
        if (left.prev >= 0) push_pair(left.prev);
        push_pair(top.pos);
    }
}

std::vector<int32_t> BpeModel::encode_uncached(std::string_view piece) const {
    if (ignore_merges_) {
        if (const auto id = token_to_id(piece)) return {*id};
    }
    std::vector<Symbol> symbols = initial_symbols(piece);
    merge_symbols(symbols);
    std::vector<int32_t> ids;
    for (int32_t pos = symbols.empty() ? -1 : 0; pos >= 0; pos = symbols[pos].next)
        ids.push_back(symbols[pos].id);
    return ids;
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& ids) const {
    if (piece.empty()) return;
    const bool cacheable = piece.size() <= kMaxCachedPieceBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        const auto it = cache_.find(std::string(piece));
        if (it != cache_.end()) {
            ids.insert(ids.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int32_t> piece_ids = encode_uncached(piece);
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() >= kMaxCacheEntries) cache_.clear();
        cache_.emplace(std::string(piece), std::move(piece_ids));
    }
}

}  // namespace lmrun
