#include "tokenizer/token_map.h"

#include <xxhash.h>

namespace lmrun {

void TokenMap::build(const std::vector<std::string>& tokens, const std::vector<bool>& present) {
    tokens_ = &tokens;
    size_t capacity = 16;
    while (capacity < tokens.size() * 2) capacity *= 2;
    slots_.assign(capacity, Slot{0, -1});
    mask_ = capacity - 1;
    for (size_t id = 0; id < tokens.size(); ++id) {
        if (!present[id]) continue;
        const uint64_t hash = XXH3_64bits(tokens[id].data(), tokens[id].size());
        const auto tag = static_cast<uint32_t>(hash >> 32);
        size_t slot = hash & mask_;
        while (slots_[slot].id >= 0 &&
               !(slots_[slot].tag == tag && tokens[static_cast<size_t>(slots_[slot].id)] == tokens[id])) {
            slot = (slot + 1) & mask_;
        }
        slots_[slot] = Slot{tag, static_cast<int32_t>(id)};
    }
}

std::optional<int32_t> TokenMap::find(std::string_view token) const {
    if (slots_.empty()) return std::nullopt;
    const uint64_t hash = XXH3_64bits(token.data(), token.size());
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t slot = hash & mask_;; slot = (slot + 1) & mask_) {
        const Slot& entry = slots_[slot];
        if (entry.id < 0) return std::nullopt;
        if (entry.tag == tag && (*tokens_)[static_cast<size_t>(entry.id)] == token) return entry.id;
    }
}

}  // namespace lmrun
