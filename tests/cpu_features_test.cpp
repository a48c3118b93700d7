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
    const Isa best = best_isa(f);
    const char* cap = std::getenv("LMRUN_ISA");
    const std::string cap_name = cap ? cap : "";
    Isa expected = best;
    for (Isa level : {Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Avx512Bf16, Isa::AmxBf16}) {
        if (isa_name(level) == cap_name && level < best) expected = level;
    }
    EXPECT_EQ(isa_name(kernel_isa()), isa_name(expected)) << "LMRUN_ISA=" << cap_name;
}

// Each level implies the features of the levels below it (the kernels rely on that).
TEST(CpuFeatures, LevelsAreALadder) {
    CpuFeatures f;
    f.avx2 = f.fma = true;
    EXPECT_EQ(best_isa(f), Isa::Avx2);
    f.avx512_bf16 = f.avx512_vnni = f.amx_bf16 = true;  // without AVX-512 F/BW/VL/DQ they do not count
    EXPECT_EQ(best_isa(f), Isa::Avx2);
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
    f.avx512_vnni = false;  // BF16 without VNNI stays at plain AVX-512
    EXPECT_EQ(best_isa(f), Isa::Avx512);
    f.avx512_vnni = true;
    f.avx512_bf16 = false;
    EXPECT_EQ(best_isa(f), Isa::Avx512Vnni);
    f.avx512_bf16 = true;
    f.amx_bf16 = false;
    EXPECT_EQ(best_isa(f), Isa::Avx512Bf16);
    f.amx_bf16 = true;
    EXPECT_EQ(best_isa(f), Isa::AmxBf16);
}

}  // namespace
}  // namespace lmrun
