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

BpeModel::BpeModel(BpeModel&& other) noexcept { *this = std::move(other); }

BpeModel& BpeModel::operator=(BpeModel&& other) noexcept {
    vocab_ = std::move(other.vocab_);
    id_to_token_ = std::move(other.id_to_token_);
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

Result<BpeModel> BpeModel::from_json(const nlohmann::json& spec) {
    if (!spec.is_object()) return make_error("\"model\" is missing or not an object");
    const std::string type = spec.value("type", std::string("BPE"));
    if (type != "BPE") return make_error("unsupported model type '{}' (only BPE is implemented)", type);
    if (spec.contains("dropout") && spec["dropout"].is_number() && spec["dropout"].get<double>() > 0.0) {
        return make_error("BPE dropout is not supported");
    }
    BpeModel model;
    LMRUN_RETURN_IF_ERROR(model.load_vocab(spec.at("vocab")));
    LMRUN_RETURN_IF_ERROR(model.load_merges(spec.at("merges")));
    model.fuse_unk_ = spec.value("fuse_unk", false);
    model.byte_fallback_ = spec.value("byte_fallback", false);
    model.ignore_merges_ = spec.value("ignore_merges", false);
    model.continuing_subword_prefix_ = optional_string(spec, "continuing_subword_prefix");
    model.end_of_word_suffix_ = optional_string(spec, "end_of_word_suffix");
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

Status BpeModel::load_vocab(const nlohmann::json& vocab) {
    if (!vocab.is_object()) return make_error("model.vocab must be an object");
    vocab_.reserve(vocab.size());
    int32_t max_id = -1;
    for (const auto& [token, id_json] : vocab.items()) {
        const auto id = id_json.get<int64_t>();
        if (id < 0 || id > INT32_MAX) return make_error("model.vocab: id {} of '{}' is out of range", id, token);
        vocab_.emplace(token, static_cast<int32_t>(id));
        max_id = std::max(max_id, static_cast<int32_t>(id));
    }
    id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string());
    for (const auto& [token, id] : vocab_) id_to_token_[id] = token;
    return ok_status();
}

Status BpeModel::load_merges(const nlohmann::json& merges) {
    if (!merges.is_array()) return make_error("model.merges must be an array");
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& merge = merges[rank];
        std::string left, right;
        if (merge.is_string()) {
            const std::string& line = merge.get_ref<const std::string&>();
            const size_t space = line.find(' ');
            if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
                return make_error("model.merges[{}]: '{}' is not two tokens separated by a space", rank, line);
            }
            left = line.substr(0, space);
            right = line.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2) {
            left = merge[0].get<std::string>();
            right = merge[1].get<std::string>();
        } else {
            return make_error("model.merges[{}] is neither \"a b\" nor [a, b]", rank);
        }
        const auto left_id = token_to_id(left);
        const auto right_id = token_to_id(right);
        const auto new_id = token_to_id(left + right);
        if (!left_id || !right_id || !new_id) {
            return make_error("model.merges[{}]: '{}' + '{}' uses a token missing from the vocab", rank, left,
                              right);
        }
        merges_.insert_or_assign(pair_key(*left_id, *right_id), Merge{static_cast<int32_t>(rank), *new_id});
    }
    return ok_status();
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
    const auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
    if (id < 0 || id >= num_ids()) return nullptr;
    const std::string& token = id_to_token_[id];
    // Holes in the id range are empty strings; a real token is never empty.
    if (token.empty() && !vocab_.contains(std::string_view())) return nullptr;
    return &token;
}

std::vector<BpeModel::Symbol> BpeModel::initial_symbols(std::string_view piece) const {
    std::vector<Symbol> symbols;
    symbols.reserve(piece.size());
    auto push = [&symbols](int32_t id) {
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back({id, index - 1, index + 1});
    };
    std::optional<int32_t> pending_unk;
    std::string key;
    for (size_t pos = 0; pos < piece.size();) {
        const size_t length = std::min(utf8_char_length(static_cast<unsigned char>(piece[pos])), piece.size() - pos);
        const std::string_view character = piece.substr(pos, length);
        const bool is_first = pos == 0;
        pos += length;
        const bool is_last = pos == piece.size();
        key.assign(is_first ? "" : continuing_subword_prefix_);
        key.append(character);
        if (is_last) key.append(end_of_word_suffix_);
        if (const auto id = token_to_id(key)) {
            if (pending_unk) push(*pending_unk);
            pending_unk.reset();
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
            if (pending_unk && !fuse_unk_) push(*pending_unk);
            pending_unk = *unk_id_;
        }
    }
    if (pending_unk) push(*pending_unk);
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
        const auto it = merges_.find(pair_key(symbols[pos].id, symbols[next].id));
        if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
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
        const auto it = merges_.find(pair_key(left.id, right.id));
        if (it == merges_.end() || it->second.new_id != top.new_id) continue;
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
    for (int32_t pos = symbols.empty() ? -1 : 0; pos >= 0; pos = symbols[pos].next) ids.push_back(symbols[pos].id);
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
