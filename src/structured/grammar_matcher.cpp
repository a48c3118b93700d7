#include "structured/grammar_matcher.h"

#include <algorithm>

namespace lmrun::structured {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), stepper_(grammar_->automaton()) {
    levels_.resize(grammar_->vocabulary().max_token_bytes() + 1);
    std::vector<StackConfig> start;
    const bool can_end = stepper_.close(arena_, {grammar_->automaton().root_state(), -1}, start);
    push_snapshot(start, can_end, false);
}

std::span<const StackConfig> GrammarMatcher::current_configs() const {
    const Snapshot& now = current();
    return {configs_.data() + now.configs_begin, now.configs_end - now.configs_begin};
}

void GrammarMatcher::push_snapshot(const std::vector<StackConfig>& configs, bool can_end, bool terminated) {
    Snapshot snapshot{configs_.size(), configs_.size() + configs.size(), arena_.size(), can_end, terminated};
    configs_.insert(configs_.end(), configs.begin(), configs.end());
    history_.push_back(snapshot);
}

std::pair<bool, bool> GrammarMatcher::run_bytes(std::string_view bytes) {
    if (levels_.size() < bytes.size() + 1) levels_.resize(bytes.size() + 1);
    auto configs = current_configs();
    levels_[0].assign(configs.begin(), configs.end());
    bool reached_end = false;
    for (size_t i = 0; i < bytes.size(); ++i) {
        StepResult step =
            stepper_.advance(arena_, levels_[i], static_cast<uint8_t>(bytes[i]), levels_[i + 1]);
        if (!step.moved) return {false, false};
        reached_end = step.reached_end;
    }
    return {true, reached_end};
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
    if (is_terminated()) return false;
    const size_t arena_mark = arena_.size();
    auto [moved, reached_end] = run_bytes(bytes);
    if (!moved) {
        arena_.truncate(arena_mark);
        return false;
    }
    if (bytes.empty()) reached_end = can_end();
    push_snapshot(levels_[bytes.size()], reached_end, false);
    return true;
}

bool GrammarMatcher::accept_token(int32_t token_id) {
    const TokenVocabulary& vocabulary = grammar_->vocabulary();
    if (is_terminated() || token_id < 0 || token_id >= vocabulary.vocab_size()) return false;
    if (vocabulary.is_end_token(token_id)) {
        if (!can_end()) return false;
        push_snapshot({}, true, true);
        return true;
    }
    if (!vocabulary.is_text_token(token_id)) return false;
    return accept_bytes(vocabulary.token_bytes(token_id));
}

void GrammarMatcher::rollback(int32_t num_tokens) {
    num_tokens = std::clamp(num_tokens, 0, num_accepted_tokens());
    history_.resize(history_.size() - size_t(num_tokens));
    configs_.resize(current().configs_end);
    arena_.truncate(current().arena_size);
}

// The cache entry for one stack top: its state's own, or the (state, return state)
// pair where the state's own would leave most tokens to check against the stack.
const StateTokenMask& GrammarMatcher::cached_mask(StackConfig config) const {
    const TokenMaskCache& cache = grammar_->mask_cache();
    const StateTokenMask& own = cache.get(config.state);
    if (config.parent < 0 || !cache.pair_worthwhile(own)) return own;
    return cache.get(config.state, arena_.frame(config.parent).state);
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> mask) {
    const TokenVocabulary& vocabulary = grammar_->vocabulary();
    std::fill(mask.begin(), mask.end(), 0u);
    if (is_terminated()) return;
    const auto configs = current_configs();
    cached_.clear();
    for (const StackConfig& config : configs) cached_.push_back(&cached_mask(config));
    if (configs.size() == 1) {
        cached_[0]->fill_accepted(vocabulary, mask);
    } else {
        scratch_mask_.resize(mask.size());
        for (const StateTokenMask* cached : cached_) {
            cached->fill_accepted(vocabulary, scratch_mask_);
            for (size_t w = 0; w < mask.size(); ++w) mask[w] |= scratch_mask_[w];
        }
    }
    const size_t arena_mark = arena_.size();
    for (size_t i = 0; i < configs.size(); ++i) {
        if (!cached_[i]->uncertain.empty()) check_uncertain(configs[i], *cached_[i], mask);
    }
    arena_.truncate(arena_mark);
    if (can_end()) {
        for (int32_t id : vocabulary.end_token_ids()) mask[size_t(id) / 32] |= 1u << (id % 32);
    }
}

// Runs the uncertain tokens of one stack top against its real stack, in trie
// order: levels_[d] holds the configurations after the first d bytes of the
// previous token, reused for the prefix the next token shares with it.
void GrammarMatcher::check_uncertain(StackConfig config, const StateTokenMask& cached,
                                     std::span<uint32_t> mask) {
    const TokenVocabulary& vocabulary = grammar_->vocabulary();
    levels_[0].assign(1, config);
    size_t valid_depth = 0;          // levels_[0..valid_depth] describe `previous`
    size_t failed_depth = SIZE_MAX;  // `previous` died at this byte count
    std::string_view previous;
    for (int32_t position : cached.uncertain) {
        const int32_t id = vocabulary.trie_tokens()[size_t(position)];
        if (mask[size_t(id) / 32] & (1u << (id % 32))) continue;  // another stack top allows it already
        const std::string_view bytes = vocabulary.token_bytes(id);
        size_t common = 0;
        const size_t limit = std::min(bytes.size(), previous.size());
        while (common < limit && bytes[common] == previous[common]) ++common;
        previous = bytes;
        if (common >= failed_depth) continue;  // shares the prefix that already failed
        failed_depth = SIZE_MAX;
        size_t depth = std::min(common, valid_depth);
        bool alive = true;
        for (; depth < bytes.size(); ++depth) {
            StepResult step = stepper_.advance(arena_, levels_[depth], static_cast<uint8_t>(bytes[depth]),
                                               levels_[depth + 1]);
            if (!step.moved) {
                alive = false;
                failed_depth = depth + 1;
                break;
            }
        }
        valid_depth = depth;
        if (alive) mask[size_t(id) / 32] |= 1u << (id % 32);
    }
}

}  // namespace lmrun::structured
