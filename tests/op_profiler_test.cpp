#include "core/op_profiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace lmrun {
namespace {

TEST(OpProfiler, CountsScopesOnlyWhenEnabled) {
    OpProfiler& profiler = OpProfiler::instance();
    const bool was_enabled = profiler.enabled();
    profiler.set_enabled(false);
    profiler.reset();
    {
        ScopedOp scope(Op::Attention);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(profiler.seconds()[size_t(Op::Attention)], 0.0);

    profiler.set_enabled(true);
    for (int i = 0; i < 2; ++i) {
        ScopedOp scope(Op::Attention);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const auto seconds = profiler.seconds();
    EXPECT_GE(seconds[size_t(Op::Attention)], 0.004);  // both scopes, summed
    EXPECT_LT(seconds[size_t(Op::Attention)], 1.0);
    EXPECT_EQ(seconds[size_t(Op::QkvProj)], 0.0);  // other ops untouched

    profiler.reset();
    EXPECT_EQ(profiler.seconds()[size_t(Op::Attention)], 0.0);
    profiler.set_enabled(was_enabled);
}

TEST(OpProfiler, EveryOpHasAName) {
    for (size_t op = 0; op < size_t(Op::kCount); ++op) {
        EXPECT_NE(op_name(Op(op)), "?") << op;
        EXPECT_FALSE(op_name(Op(op)).empty()) << op;
    }
}

}  // namespace
}  // namespace lmrun
