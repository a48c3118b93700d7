#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace lmrun {
namespace {

// CTest runs the model goldens again with LMRUN_ISA set (see CMakeLists.txt): this checks that
// those runs really are on the capped level, and that without a cap the best level is used.
TEST(CpuFeatures, KernelIsaIsTheBestLevelUnderTheCap) {
    const CpuFeatures& f = cpu_features();
    ASSERT_TRUE(f.avx2 && f.fma) << "lmrun needs AVX2 and FMA";
    Isa best = Isa::Avx2;
    if (f.avx512f && f.avx512bw && f.avx512vl) best = Isa::Avx512;
    if (best == Isa::Avx512 && f.avx512_bf16) best = Isa::Avx512Bf16;
    if (best == Isa::Avx512Bf16 && f.amx_bf16) best = Isa::AmxBf16;
    const char* cap = std::getenv("LMRUN_ISA");
    const std::string cap_name = cap ? cap : "";
    Isa expected = best;
    if (cap_name == "avx2") expected = Isa::Avx2;
    if (cap_name == "avx512" && best > Isa::Avx512) expected = Isa::Avx512;
    if (cap_name == "avx512_bf16" && best > Isa::Avx512Bf16) expected = Isa::Avx512Bf16;
    EXPECT_EQ(isa_name(kernel_isa()), isa_name(expected)) << "LMRUN_ISA=" << cap_name;
}

}  // namespace
}  // namespace lmrun
