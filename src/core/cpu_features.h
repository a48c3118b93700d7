// What the CPU can run, detected once with CPUID/XGETBV. Kernel dispatch reads
// this; LMRUN_ISA=avx2|avx512|avx512_bf16 caps it (to test the fallback paths on a big CPU).
#pragma once

#include <string>

namespace lmrun {

enum class Isa { Avx2, Avx512, Avx512Bf16, AmxBf16 };

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512_bf16 = false;
    bool amx_bf16 = false;  // includes the OS permission to use AMX tiles
};

const CpuFeatures& cpu_features();
// The best ISA level the kernels may use, after the LMRUN_ISA cap.
Isa kernel_isa();
std::string isa_name(Isa isa);

}  // namespace lmrun
