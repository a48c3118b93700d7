#include "structured/token_mask_cache.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "structured/pda_stepper.h"

namespace lmrun::structured {
namespace {

void set_bit(std::span<uint32_t> mask, int32_t id) {
    mask[size_t(id) / 32] |= 1u << (id % 32);
}

void clear_bit(std::span<uint32_t> mask, int32_t id) {
    mask[size_t(id) / 32] &= ~(1u << (id % 32));
}

// Trie positions [begin, end) of the tokens in node's subtree (node included).
std::pair<int32_t, int32_t> subtree_tokens(const TokenVocabulary& vocabulary, int32_t node) {
    const auto& trie = vocabulary.trie();
    const int32_t end_node = trie[size_t(node)].subtree_end;
    const int32_t end = end_node < vocabulary.num_nodes() ? trie[size_t(end_node)].tokens_begin
                                                          : int32_t(vocabulary.trie_tokens().size());
    return {trie[size_t(node)].tokens_begin, end};
}

// The walk keeps, per depth of the current trie path, the configurations after
// that many bytes. Most depths hold one configuration whose state neither calls
// nor ends its rule ("simple"): those live in flat arrays and cost one table
// lookup per trie node; the rest go through the general stepper.
class TrieWalker {
    static constexpr size_t kNoLastDepth = size_t(1) << 40;

  public:
    TrieWalker(const PushdownAutomaton& pda, const TokenVocabulary& vocabulary)
        : pda_(pda), vocabulary_(vocabulary), stepper_(pda) {
        const size_t depths = vocabulary.max_token_bytes() + 1;
        path_.assign(depths, PathLevel{});
        configs_.resize(depths);
    }

    // Classifies every text token from `state`: accepted ids into `accepted` (a bitset),
    // uncertain trie positions into `uncertain`. Returns the number accepted.
    // With return_state >= 0 the walk starts with it below `state` on the stack, and
    // tokens are uncertain only where the return state's rule can end inside them.
    int32_t walk(int32_t state, int32_t return_state, std::span<uint32_t> accepted,
                 std::vector<int32_t>& uncertain) {
        const int32_t bottom_state = return_state >= 0 ? return_state : state;
        const bool escapes_matter = pda_.rule_is_called(pda_.rule_of_state(bottom_state));
        arena_.clear();
        const int32_t parent = return_state >= 0 ? arena_.push(return_state, -1) : -1;
        path_[0] = PathLevel{};
        path_[0].arena_mark = int32_t(arena_.size());
        configs_[0].assign(1, {state, parent});
        set_level(0);
        const auto& trie = vocabulary_.trie();
        const int32_t* trie_tokens = vocabulary_.trie_tokens().data();
        const int32_t num_nodes = vocabulary_.num_nodes();
        WalkCursor cursor;
        cursor.last_state = path_[0].simple_state;
        for (int32_t node = 0; node < num_nodes;) {
            node = walk_plain(node, cursor, accepted);
            if (node >= num_nodes) break;
            const TokenVocabulary::TrieNode& entry = trie[size_t(node)];
            const size_t depth = entry.depth;
            const int32_t parent_state = path_[depth - 1].simple_state;
            const bool parent_escaped = path_[depth - 1].escaped;
            if (parent_state < 0 && configs_[depth - 1].empty()) {
                // Only an escaped path gets here: everything below depends on the caller.
                auto [begin, end] = subtree_tokens(vocabulary_, node);
                for (int32_t k = begin; k < end; ++k) uncertain.push_back(k);
                node = entry.subtree_end;
                cursor.last_depth = kNoLastDepth;
                continue;
            }
            const StepResult step = advance_general(depth, entry.byte);
            path_[depth].escaped = parent_escaped || (step.reached_end && escapes_matter);
            if (step.moved) {
                for (int32_t k = entry.tokens_begin; k < entry.tokens_end; ++k) {
                    const int32_t id = trie_tokens[k];
                    accepted[size_t(id) / 32] |= 1u << (id % 32);
                    ++cursor.num_accepted;
                }
            } else if (parent_escaped) {
                for (int32_t k = entry.tokens_begin; k < entry.tokens_end; ++k) uncertain.push_back(k);
            }
            const bool level_empty = path_[depth].simple_state < 0 && configs_[depth].empty();
            node = level_empty && !path_[depth].escaped ? entry.subtree_end : node + 1;
            cursor.last_depth = depth;
            cursor.last_state = path_[depth].simple_state;
        }
        return cursor.num_accepted;
    }

  private:
    struct WalkCursor {
        size_t last_depth = 0;  // depth and simple state of the node visited last
        int32_t last_state = -1;
        int32_t num_accepted = 0;
    };

    // Runs the fast path from `node`: a simple parent (usually the node just visited,
    // whose state is still in a register) moving to a simple state, or a dead byte
    // whose whole subtree is rejected. Returns the first node that needs the general
    // step. Everything hot is a local so that it stays in registers.
    int32_t walk_plain(int32_t node, WalkCursor& cursor, std::span<uint32_t> accepted_span) {
        const TokenVocabulary::TrieNode* trie = vocabulary_.trie().data();
        const int32_t* trie_tokens = vocabulary_.trie_tokens().data();
        const int32_t num_nodes = vocabulary_.num_nodes();
        const int32_t* table = pda_.transition_table();
        const uint8_t* byte_class = pda_.byte_class_table();
        const size_t num_classes = size_t(pda_.num_byte_classes());
        PathLevel* path = path_.data();
        uint32_t* accepted = accepted_span.data();
        size_t last_depth = cursor.last_depth;
        int32_t last_state = cursor.last_state;
        int32_t num_accepted = cursor.num_accepted;
        while (node < num_nodes) {
            const TokenVocabulary::TrieNode& entry = trie[node];
            const size_t depth = entry.depth;
            const PathLevel& parent = path[depth - 1];
            const int32_t parent_state = depth == last_depth + 1 ? last_state : parent.simple_state;
            if (parent_state < 0) break;
            const int32_t next = table[size_t(parent_state) * num_classes + byte_class[entry.byte]];
            if (next >= 0 && !(next & PushdownAutomaton::kNotPlainBit)) {
                PathLevel& level = path[depth];
                level.simple_state = next;
                level.simple_parent = parent.simple_parent;
                level.arena_mark = parent.arena_mark;
                level.escaped = parent.escaped;
                last_depth = depth;
                last_state = next;
                for (int32_t k = entry.tokens_begin; k < entry.tokens_end; ++k) {
                    const int32_t id = trie_tokens[k];
                    accepted[size_t(id) / 32] |= 1u << (id % 32);
                    ++num_accepted;
                }
                ++node;
                continue;
            }
            if (next != PushdownAutomaton::kNoTransition || parent.escaped) {
                last_state = parent_state;  // the general step reads the parent from path_
                break;
            }
            node = entry.subtree_end;  // this byte fails: the whole subtree is rejected
            last_depth = kNoLastDepth;
        }
        cursor.last_depth = last_depth;
        cursor.last_state = last_state;
        cursor.num_accepted = num_accepted;
        return node;
    }

    // configs_[depth] was just computed: mark the level simple if it is one scanning-only configuration.
    void set_level(size_t depth) {
        const auto& configs = configs_[depth];
        const bool simple = configs.size() == 1 && pda_.flags(configs[0].state) == PushdownAutomaton::kScans;
        path_[depth].simple_state = simple ? configs[0].state : -1;
        path_[depth].simple_parent = simple ? configs[0].parent : -1;
    }

    StepResult advance_general(size_t depth, uint8_t byte) {
        arena_.truncate(path_[depth - 1].arena_mark);
        auto& parent = configs_[depth - 1];
        if (path_[depth - 1].simple_state >= 0)
            parent.assign(1, {path_[depth - 1].simple_state, path_[depth - 1].simple_parent});
        const StepResult step = stepper_.advance(arena_, parent, byte, configs_[depth]);
        set_level(depth);
        path_[depth].arena_mark = int32_t(arena_.size());
        return step;
    }

    const PushdownAutomaton& pda_;
    const TokenVocabulary& vocabulary_;
    PdaStepper stepper_;
    StackArena arena_;
    struct PathLevel {
        int32_t simple_state = -1;  // the lone simple configuration, or -1 (see configs_)
        int32_t simple_parent = -1;
        int32_t arena_mark = 0;
        int32_t escaped = 0;  // the rule ended somewhere on the path: the rest depends on the caller
    };
    std::vector<PathLevel> path_;                    // per depth
    std::vector<std::vector<StackConfig>> configs_;  // per depth, when not simple
};

}  // namespace

void StateTokenMask::fill_accepted(const TokenVocabulary& vocabulary, std::span<uint32_t> mask) const {
    switch (storage) {
        case Storage::AcceptedIds:
            std::fill(mask.begin(), mask.end(), 0u);
            for (int32_t id : ids) set_bit(mask, id);
            return;
        case Storage::Bitset:
            std::memcpy(mask.data(), bits.data(), mask.size_bytes());
            return;
        case Storage::RejectedIds: {
            std::span<const uint32_t> text = vocabulary.text_token_mask();
            std::memcpy(mask.data(), text.data(), mask.size_bytes());
            for (int32_t id : ids) clear_bit(mask, id);
            for (int32_t k : uncertain) clear_bit(mask, vocabulary.trie_tokens()[size_t(k)]);
            return;
        }
    }
}

StateTokenMask compute_state_token_mask(const PushdownAutomaton& pda, const TokenVocabulary& vocabulary,
                                        int32_t state, int32_t return_state) {
    std::vector<uint32_t> accepted(size_t(vocabulary.num_mask_words()), 0);
    StateTokenMask mask;
    TrieWalker walker(pda, vocabulary);
    mask.num_accepted = walker.walk(state, return_state, accepted, mask.uncertain);
    std::sort(mask.uncertain.begin(), mask.uncertain.end());
    const size_t num_text = vocabulary.trie_tokens().size();
    const size_t num_rejected = num_text - size_t(mask.num_accepted) - mask.uncertain.size();
    const size_t list_limit = size_t(vocabulary.num_mask_words());
    if (size_t(mask.num_accepted) <= list_limit) {
        mask.storage = StateTokenMask::Storage::AcceptedIds;
        for (size_t w = 0; w < accepted.size(); ++w) {
            for (uint32_t bits = accepted[w]; bits != 0; bits &= bits - 1)
                mask.ids.push_back(int32_t(w * 32) + std::countr_zero(bits));
        }
    } else if (num_rejected <= list_limit) {
        mask.storage = StateTokenMask::Storage::RejectedIds;
        std::vector<uint32_t> known = accepted;
        for (int32_t k : mask.uncertain) set_bit(known, vocabulary.trie_tokens()[size_t(k)]);
        std::span<const uint32_t> text = vocabulary.text_token_mask();
        for (size_t w = 0; w < known.size(); ++w) {
            for (uint32_t bits = text[w] & ~known[w]; bits != 0; bits &= bits - 1)
                mask.ids.push_back(int32_t(w * 32) + std::countr_zero(bits));
        }
    } else {
        mask.storage = StateTokenMask::Storage::Bitset;
        mask.bits = std::move(accepted);
    }
    return mask;
}

TokenMaskCache::TokenMaskCache(const PushdownAutomaton& pda,
                               std::shared_ptr<const TokenVocabulary> vocabulary)
    : pda_(pda), vocabulary_(std::move(vocabulary)), entries_(new Entry[size_t(pda.num_states())]) {}

const StateTokenMask& TokenMaskCache::get(int32_t state) const {
    Entry& entry = entries_[size_t(state)];
    std::call_once(entry.once, [&] {
        entry.mask = compute_state_token_mask(pda_, *vocabulary_, state);
        num_computed_.fetch_add(1, std::memory_order_relaxed);
    });
    return entry.mask;
}

const StateTokenMask& TokenMaskCache::get(int32_t state, int32_t return_state) const {
    Entry* entry = nullptr;
    {
        std::lock_guard lock(pairs_mutex_);
        std::unique_ptr<Entry>& slot = pair_entries_[(int64_t(state) << 32) | uint32_t(return_state)];
        if (!slot) slot = std::make_unique<Entry>();
        entry = slot.get();
    }
    std::call_once(entry->once, [&] {
        entry->mask = compute_state_token_mask(pda_, *vocabulary_, state, return_state);
        num_pairs_computed_.fetch_add(1, std::memory_order_relaxed);
    });
    return entry->mask;
}

bool TokenMaskCache::pair_worthwhile(const StateTokenMask& entry) const {
    // Checking this many tokens against the stack at every step costs more than one walk.
    constexpr size_t kMinUncertainShare = 32;
    return !entry.uncertain.empty() &&
           entry.uncertain.size() * kMinUncertainShare >= vocabulary_->trie_tokens().size();
}

int64_t TokenMaskCache::num_computed() const {
    return num_computed_.load(std::memory_order_relaxed);
}

int64_t TokenMaskCache::num_pairs_computed() const {
    return num_pairs_computed_.load(std::memory_order_relaxed);
}

}  // namespace lmrun::structured
