// Token string -> id lookup for large vocabularies: open addressing over a flat
// array of (hash tag, id) slots; the strings themselves stay in the caller's
// id -> token table, so a lookup touches one slot and one string. Built once,
// then read-only (safe to share between threads).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lmrun {

// Token ids of a tokenizer.json (model vocab and added tokens) lie in [0, kMaxTokenIds):
// tables indexed by id stay bounded whatever a file claims. Four times the largest
// vocabularies in use (Gemma's 262k).
inline constexpr int32_t kMaxTokenIds = int32_t(1) << 22;

class TokenMap {
  public:
    // `tokens` must outlive the map and not change; empty slots are skipped when
    // `present[id]` is false. A repeated string keeps its highest id.
    void build(const std::vector<std::string>& tokens, const std::vector<bool>& present);
    std::optional<int32_t> find(std::string_view token) const;
    // After the owner moved `tokens` (same contents, new vector object).
    void rebind(const std::vector<std::string>& tokens) { tokens_ = &tokens; }

  private:
    struct Slot {
        uint32_t tag;
        int32_t id;  // -1: empty
    };
    const std::vector<std::string>* tokens_ = nullptr;
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

}  // namespace lmrun
