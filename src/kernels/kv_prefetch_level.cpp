#include "kernels/kv_prefetch_level.h"

#include <cstdlib>

#include "core/cpu_features.h"
#include "core/logging.h"

namespace lmrun::kernels {

KvPrefetchLevel kv_prefetch_level_for_l1d(int64_t l1d_bytes) {
    constexpr int64_t kLargeL1d = int64_t{48} * 1024;
    return l1d_bytes > 0 && l1d_bytes < kLargeL1d ? KvPrefetchLevel::L2 : KvPrefetchLevel::L1;
}

std::optional<KvPrefetchLevel> parse_kv_prefetch_level(std::string_view name) {
    if (name == "l1") return KvPrefetchLevel::L1;
    if (name == "l2") return KvPrefetchLevel::L2;
    return std::nullopt;
}

KvPrefetchLevel kv_prefetch_level() {
    static const KvPrefetchLevel level = [] {
        const KvPrefetchLevel rule = kv_prefetch_level_for_l1d(cpu_features().l1d_bytes);
        const char* forced = std::getenv("LMRUN_KV_PREFETCH");
        if (forced == nullptr) return rule;
        if (const auto parsed = parse_kv_prefetch_level(forced)) return *parsed;
        log_warn("LMRUN_KV_PREFETCH={} ignored: l1 or l2 (this CPU's default: {})", forced,
                 rule == KvPrefetchLevel::L2 ? "l2" : "l1");
        return rule;
    }();
    return level;
}

}  // namespace lmrun::kernels
