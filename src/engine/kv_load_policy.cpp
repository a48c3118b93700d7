#include "engine/kv_load_policy.h"

namespace lmrun {

namespace {

// Older measurements weigh less: each new one keeps 3/4 of the history.
constexpr double kDecay = 0.75;

}  // namespace

void KvLoadPolicy::record_prefill(int64_t num_tokens, double seconds) {
    if (num_tokens <= 0 || !(seconds > 0)) return;
    prefill_tokens_ = prefill_tokens_ * kDecay + double(num_tokens);
    prefill_seconds_ = prefill_seconds_ * kDecay + seconds;
}

void KvLoadPolicy::record_load(int64_t num_bytes, double seconds) {
    if (num_bytes <= 0 || !(seconds > 0)) return;
    load_bytes_ = load_bytes_ * kDecay + double(num_bytes);
    load_seconds_ = load_seconds_ * kDecay + seconds;
}

bool KvLoadPolicy::should_load(int64_t block_tokens, int64_t block_bytes) {
    switch (mode_) {
        case KvLoadMode::Always:
            return true;
        case KvLoadMode::Auto:
            break;
    }
    const double prefill_rate = prefill_tokens_per_second();
    const double read_rate = read_bytes_per_second();
    if (prefill_rate <= 0 || read_rate <= 0) return true;
    const double load_seconds = double(block_bytes) / read_rate;
    const double compute_seconds = double(block_tokens) / prefill_rate;
    if (load_seconds < compute_seconds) {
        num_declined_ = 0;
        return true;
    }
    return ++num_declined_ % kReprobeInterval == 0;
}

}  // namespace lmrun
