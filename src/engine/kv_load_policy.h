// KvLoadPolicy: whether loading a block from the KV tier below RAM beats recomputing it.
// Loading costs bytes_per_block / read rate; recomputing costs block_size / prefill rate.
// Both rates are measured as the engine runs (exponentially decayed sums of the prefill
// steps' tokens and seconds, and of the loads' bytes and seconds), so the crossover follows
// the machine, the model and the disk (page cache warm or not) without a start-up benchmark:
//   load when  bytes_per_block / read_bytes_per_s  <  block_size / prefill_tokens_per_s.
// Until both rates have a measurement it loads (that is how the read rate gets measured).
// When recomputing wins it still loads once every kReprobeInterval decisions, so that a
// disk that became faster (its files now in the page cache) is noticed.
#pragma once

#include <cstdint>

namespace lmrun {

enum class KvLoadMode {
    Auto,    // the measured crossover above
    Always,  // load whatever the tier has (tests; a disk known to be fast)
};

class KvLoadPolicy {
  public:
    static constexpr int64_t kReprobeInterval = 16;

    explicit KvLoadPolicy(KvLoadMode mode = KvLoadMode::Auto) : mode_(mode) {}

    void record_prefill(int64_t num_tokens, double seconds);
    void record_load(int64_t num_bytes, double seconds);
    // One decision for a block of block_tokens tokens and block_bytes bytes.
    bool should_load(int64_t block_tokens, int64_t block_bytes);

    // 0 until measured.
    double prefill_tokens_per_second() const { return rate(prefill_tokens_, prefill_seconds_); }
    double read_bytes_per_second() const { return rate(load_bytes_, load_seconds_); }

  private:
    static double rate(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0; }

    KvLoadMode mode_;
    double prefill_tokens_ = 0, prefill_seconds_ = 0;
    double load_bytes_ = 0, load_seconds_ = 0;
    int64_t num_declined_ = 0;
};

}  // namespace lmrun
