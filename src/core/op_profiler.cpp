#include "core/op_profiler.h"

#include <time.h>

namespace lmrun {

std::string_view op_name(Op op) {
    switch (op) {
        case Op::Embedding:
            return "embedding";
        case Op::Norm:
            return "rms_norm (+residual)";
        case Op::QkvProj:
            return "qkv_proj";
        case Op::QkNormRopeStore:
            return "q/k norm + rope + kv store";
        case Op::Attention:
            return "paged attention";
        case Op::OProj:
            return "o_proj";
        case Op::GateUpProj:
            return "gate_up_proj";
        case Op::SiluMul:
            return "silu * mul";
        case Op::DownProj:
            return "down_proj";
        case Op::LmHead:
            return "final norm + lm_head";
        case Op::Sampling:
            return "sampling";
        case Op::PrepareInputs:
            return "prepare inputs";
        case Op::Schedule:
            return "schedule";
        case Op::OutputProcessing:
            return "output processing";
        case Op::kCount:
            break;
    }
    return "?";
}

OpProfiler& OpProfiler::instance() {
    static OpProfiler profiler;
    return profiler;
}

void OpProfiler::reset() {
    for (auto& total : totals_) total.store(0, std::memory_order_relaxed);
}

std::array<double, size_t(Op::kCount)> OpProfiler::seconds() const {
    std::array<double, size_t(Op::kCount)> result{};
    for (size_t i = 0; i < result.size(); ++i)
        result[i] = double(totals_[i].load(std::memory_order_relaxed)) * 1e-9;
    return result;
}

int64_t monotonic_nanoseconds() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace lmrun
