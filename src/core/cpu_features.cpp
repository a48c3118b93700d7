#include "core/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace lmrun {
namespace {

uint64_t read_xcr0() {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (uint64_t(edx) << 32) | eax;
}

// Linux requires a process to ask before it may use AMX tile data (XFEATURE 18); the
// permission holds for every thread of the process.
bool request_amx_permission() {
    constexpr int kArchReqXcompPerm = 0x1023;
    constexpr int kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

CpuFeatures detect() {
    CpuFeatures features;
    const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);  // glibc reads it from CPUID (Intel and AMD)
    features.l1d_bytes = l1d > 0 ? int64_t(l1d) : 0;
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return features;
    bool osxsave = ecx & (1u << 27);
    features.fma = ecx & (1u << 12);
    if (!osxsave) return features;
    uint64_t xcr0 = read_xcr0();
    bool avx_state = (xcr0 & 0x6) == 0x6;
    bool avx512_state = (xcr0 & 0xe6) == 0xe6;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return features;
    features.avx2 = avx_state && (ebx & (1u << 5));
    features.avx512f = avx512_state && (ebx & (1u << 16));
    features.avx512dq = avx512_state && (ebx & (1u << 17));
    features.avx512bw = avx512_state && (ebx & (1u << 30));
    features.avx512vl = avx512_state && (ebx & (1u << 31));
    features.avx512_vnni = features.avx512f && (ecx & (1u << 11));
    bool amx_bf16_bit = edx & (1u << 22);
    bool amx_tile_bit = edx & (1u << 24);
    bool amx_int8_bit = edx & (1u << 25);
    unsigned eax1, ebx1, ecx1, edx1;
    if (__get_cpuid_count(7, 1, &eax1, &ebx1, &ecx1, &edx1)) {
        features.avx512_bf16 = features.avx512f && (eax1 & (1u << 5));
    }
    bool amx_state = (xcr0 & (3ull << 17)) == (3ull << 17);
    features.amx_bf16 = amx_bf16_bit && amx_int8_bit && amx_tile_bit && amx_state && request_amx_permission();
    return features;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

Isa best_isa(const CpuFeatures& f) {
    Isa best = Isa::Avx2;
    if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) best = Isa::Avx512;
    if (best == Isa::Avx512 && f.avx512_vnni) best = Isa::Avx512Vnni;
    if (best == Isa::Avx512Vnni && f.avx512_bf16) best = Isa::Avx512Bf16;
    if (best == Isa::Avx512Bf16 && f.amx_bf16) best = Isa::AmxBf16;
    return best;
}

Isa kernel_isa() {
    static const Isa isa = [] {
        Isa best = best_isa(cpu_features());
        const char* cap = std::getenv("LMRUN_ISA");
        if (cap == nullptr) return best;
        for (Isa level : {Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Avx512Bf16, Isa::AmxBf16}) {
            if (isa_name(level) == cap || (level == Isa::AmxBf16 && std::strcmp(cap, "amx_bf16") == 0))
                return level < best ? level : best;
        }
        return best;
    }();
    return isa;
}

std::string isa_name(Isa isa) {
    switch (isa) {
        case Isa::Avx2:
            return "avx2";
        case Isa::Avx512:
            return "avx512";
        case Isa::Avx512Vnni:
            return "avx512_vnni";
        case Isa::Avx512Bf16:
            return "avx512_bf16";
        case Isa::AmxBf16:
            return "amx";
    }
    return "?";
}

}  // namespace lmrun
