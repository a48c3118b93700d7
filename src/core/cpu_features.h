// What the CPU can run, detected once with CPUID/XGETBV. Kernel dispatch reads this as one
// ladder of levels (kernel_isa()); LMRUN_ISA=avx2|avx512|avx512_vnni|avx512_bf16|amx caps it, to
// test the fallback paths on a big CPU.
//   avx2         AVX2 + FMA (Zen 3): F32 FMAs, int8 via vpmaddubsw/vpmaddwd
//   avx512       AVX-512 F/BW/VL/DQ (Skylake-X)
//   avx512_vnni  + VNNI: vpdpbusd for int8 dot products (Cascade Lake)
//   avx512_bf16  + BF16 dot products (Zen 4/5, Cooper Lake); implies VNNI
//   amx          + AMX tiles for BF16 and int8 (Sapphire Rapids); OS permission requested
#pragma once

#include <cstdint>
#include <string>

namespace lmrun {

enum class Isa { Avx2, Avx512, Avx512Vnni, Avx512Bf16, AmxBf16 };

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512_vnni = false;
    bool avx512_bf16 = false;
    bool amx_bf16 = false;  // AMX tiles with BF16 and INT8 dot products, and the OS permission to use them
    int64_t l1d_bytes = 0;  // one core's L1 data cache (0: not reported)
};

const CpuFeatures& cpu_features();
// The best level the CPU supports, before any cap.
Isa best_isa(const CpuFeatures& features);
// The best ISA level the kernels may use, after the LMRUN_ISA cap.
Isa kernel_isa();
std::string isa_name(Isa isa);

}  // namespace lmrun
