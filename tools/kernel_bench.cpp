// Kernel throughput on Qwen3-0.6B shapes: GB/s of the BF16/F32 GEMV (decode rows) and GFLOP/s
// of the oneDNN matmul path (prefill rows), plus the GEMV-vs-oneDNN crossover and attention;
// --only int8: the int8 (W8A8) kernels linear() picks for this ISA, GB/s of int8 weights.
// Usage: kernel_bench [--threads N] [--quick] [--cpu-time] [--only linear|int8|attention]
//                     [--kv-dtype bf16|int8|fp8] [--kv-working-set BYTES] [--rows 1,2,8]
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu_features.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "kernels/attention.h"
#include "kernels/linear.h"
#include "kernels/linear_gemv.h"
#include "kernels/linear_onednn.h"

namespace {

using namespace lmrun;
using namespace lmrun::kernels;

struct Shape {
    const char* name;
    int64_t out, in;
};

const Shape kShapes[] = {{"qkv", 4096, 1024},
                         {"o_proj", 1024, 2048},
                         {"gate_up", 6144, 1024},
                         {"down", 1024, 3072},
                         {"lm_head", 151936, 1024}};

// --cpu-time: time calls by the process's CPU time instead of the wall clock. On a machine
// shared with other work, wall time also counts the time they ran; with --threads 1 the CPU
// time is the kernel's own (more threads add their spin-waits at the team's barriers).
bool g_cpu_time = false;
std::vector<int64_t> g_rows;  // --rows: the linear row counts, instead of the defaults

double clock_seconds() {
    return g_cpu_time ? lmrun::process_cpu_seconds() : lmrun::now_seconds();
}

template <typename Fn>
double seconds_per_call(Fn&& fn, double budget_s = 0.3) {
    fn();  // warm-up (primitive creation, page faults)
    int64_t calls = 0;
    const double start = clock_seconds();
    do {
        fn();
        ++calls;
    } while (clock_seconds() - start < budget_s);
    return (clock_seconds() - start) / double(calls);
}

LinearWeight make_weight(const Shape& s, DType storage, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    std::vector<float> w(size_t(s.out * s.in));
    for (float& v : w) v = dist(rng);
    return LinearWeight::pack(w.data(), DType::F32, s.out, s.in, storage);
}

void bench_linear(DType storage, bool quick) {
    std::mt19937 rng(1);
    std::printf("\n== linear, %s weights ==\n", std::string(dtype_name(storage)).c_str());
    std::printf("%-8s %6s  %10s %10s %10s %10s %10s  %10s\n", "shape", "rows", "gemv GB/s", "gemv ms",
                "onednn ms", "gemm ms", "amx ms", "GFLOP/s");
    for (const Shape& s : kShapes) {
        // Enough copies to cycle through that every call streams its weight from DRAM, as in a
        // real forward pass, instead of finding it in the 32 MiB L3.
        LinearWeight first = make_weight(s, storage, rng);
        std::vector<LinearWeight> copies{first};
        while (double(copies.size() * first.nbytes()) < 256e6) copies.push_back(make_weight(s, storage, rng));
        size_t next = 0;
        auto weight_for_call = [&]() -> const LinearWeight& { return copies[next++ % copies.size()]; };
        std::vector<int64_t> rows_list = !g_rows.empty() ? g_rows
                                         : quick         ? std::vector<int64_t>{1, 8, 64}
                                                 : std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 512};
        for (int64_t rows : rows_list) {
            if (s.out > 100000 && rows > 128) continue;
            std::vector<float> x(size_t(rows * s.in), 0.5f), y(size_t(rows * s.out));
            auto gemv = kernel_isa() >= Isa::Avx512 ? linear_gemv_avx512 : linear_gemv_avx2;
            double flops = 2.0 * double(rows) * double(s.out) * double(s.in);
            // int8 weights: the "gemv" column is linear()'s int8 kernel for this ISA at every row count.
            // On AVX2 the GEMV runs at every row count too: it competes with the AVX2 GEMM there
            // (kAvx2GemmMinRows); elsewhere up to 64 rows.
            const bool int8 = storage == DType::I8;
            const int64_t gemv_max_rows = kernel_isa() == Isa::Avx2 ? 512 : 64;
            double gemv_s = rows <= gemv_max_rows || int8 ? seconds_per_call([&] {
                if (int8) {
                    linear(x.data(), rows, weight_for_call(), nullptr, y.data());
                } else {
                    gemv(x.data(), rows, weight_for_call().packed(), nullptr, y.data());
                }
            })
                                                          : 0;
            // oneDNN computes nothing where it has no kernel for these weights (BF16 on AVX2).
            const bool has_dnnl =
                !int8 && rows >= 4 && linear_onednn(x.data(), rows, first, nullptr, y.data());
            double dnnl_s = has_dnnl ? seconds_per_call([&] {
                linear_onednn(x.data(), rows, weight_for_call(), nullptr, y.data());
            })
                                     : 0;
            // The GEMM of this ISA level: AVX512_BF16 (BF16 weights), or AVX2 (more than 4 rows).
            const bool avx2_gemm = !int8 && kernel_isa() == Isa::Avx2 && rows > 4;
            bool has_gemm = (storage == DType::BF16 && kernel_isa() >= Isa::Avx512Bf16) || avx2_gemm;
            double gemm_s = has_gemm ? seconds_per_call([&] {
                if (avx2_gemm) {
                    linear_gemm_avx2(x.data(), rows, weight_for_call().packed(), nullptr, y.data());
                } else {
                    linear_gemm_bf16_avx512(x.data(), rows, weight_for_call().packed(), nullptr, y.data());
                }
            })
                                     : 0;
            bool has_amx = storage == DType::BF16 && kernel_isa() == Isa::AmxBf16 && rows > 4;
            double amx_s = has_amx ? seconds_per_call([&] {
                linear_gemm_bf16_amx(x.data(), rows, weight_for_call().packed(), nullptr, y.data());
            })
                                   : 0;
            double best = 1e30;
            for (double t : {gemv_s, dnnl_s, gemm_s, amx_s})
                if (t > 0 && t < best) best = t;
            std::printf("%-8s %6ld  %10.1f %10.3f %10.3f %10.3f %10.3f  %10.1f\n", s.name, long(rows),
                        gemv_s > 0 ? double(first.nbytes()) / gemv_s / 1e9 : 0.0, gemv_s * 1e3, dnnl_s * 1e3,
                        gemm_s * 1e3, amx_s * 1e3, flops / best / 1e9);
        }
    }
}

// One layer's K and V (and scales), huge-page-advised like the engine's KV arena
// (engine/kv_cache.cpp). BF16 2^-7 everywhere; int8 / fp8 bytes varying with the element (a
// constant row would make every softmax weight equal, which no real cache does), scales near a
// real row's.
struct KvCopy {
    std::unique_ptr<uint8_t, decltype(&std::free)> k{nullptr, &std::free}, v{nullptr, &std::free};
    std::vector<float> k_scale, v_scale;
};

KvCopy make_kv_copy(size_t elements, int64_t head_dim, DType kv_dtype) {
    const bool scaled = kv_dtype_is_scaled(kv_dtype);
    const size_t huge = size_t(2) << 20;
    const size_t bytes = (elements * (scaled ? 1 : 2) + huge - 1) / huge * huge;
    KvCopy c;
    c.k.reset(static_cast<uint8_t*>(std::aligned_alloc(huge, bytes)));
    c.v.reset(static_cast<uint8_t*>(std::aligned_alloc(huge, bytes)));
    madvise(c.k.get(), bytes, MADV_HUGEPAGE);
    madvise(c.v.get(), bytes, MADV_HUGEPAGE);
    if (scaled) {
        for (size_t i = 0; i < elements; ++i) c.k.get()[i] = uint8_t((i * 37 + i / 128 * 11) % 251) & 0xbf;
        std::memcpy(c.v.get(), c.k.get(), elements);
        c.k_scale.assign(elements / size_t(head_dim), 0.02f);  // one per token and KV head
        c.v_scale = c.k_scale;
    } else {
        std::fill_n(reinterpret_cast<uint16_t*>(c.k.get()), elements, uint16_t(0x3c00));
        std::fill_n(reinterpret_cast<uint16_t*>(c.v.get()), elements, uint16_t(0x3c00));
    }
    return c;
}

void bench_attention(bool quick, DType kv_dtype, double kv_working_set) {
    // Qwen3-0.6B: 16 query heads, 8 kv heads, head_dim 128, block 16 or 256.
    std::printf("\n== paged attention (16 heads, 8 kv heads, d=128, %s cache) ==\n",
                std::string(dtype_name(kv_dtype)).c_str());
    int64_t heads = 16, kv_heads = 8, dim = 128;
    const bool scaled = kv_dtype_is_scaled(kv_dtype);
    const size_t element_bytes = scaled ? 1 : 2;
    // Block 16 (vLLM's default) and 256 (lmrun's): decode batches as lmrun bench runs them.
    for (auto [batch, q_len, context, block] :
         std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{{1, 1, 128, 16},
                                                                     {8, 1, 128, 16},
                                                                     {32, 1, 128, 256},
                                                                     {64, 1, 128, 256},
                                                                     {1, 1, 1024, 16},
                                                                     {8, 1, 1024, 16},
                                                                     {8, 1, 4096, 256},
                                                                     {1, 1, 4096, 16},
                                                                     {1, 512, 512, 256},
                                                                     {1, 2048, 2048, 256}}) {
        if (quick && q_len > 512) continue;
        int64_t blocks_per_seq = (context + block - 1) / block;
        int64_t num_blocks = batch * blocks_per_seq;
        const size_t elements = size_t(num_blocks * block * kv_heads * dim);
        // Enough copies to cycle through that every call reads its KV from DRAM, as a decode step
        // does (28 layers' KV and the weights pass between two reads of one layer's), instead of
        // finding a small batch's few MiB in L3. --kv-working-set 0 keeps one copy: the tile's
        // own rate with the KV in cache where it fits.
        const size_t copies =
            size_t(std::max<double>(1.0, std::ceil(kv_working_set / double(2 * elements * element_bytes))));
        std::vector<KvCopy> kv;
        for (size_t i = 0; i < copies; ++i) kv.push_back(make_kv_copy(elements, dim, kv_dtype));
        std::vector<int32_t> tables(static_cast<size_t>(num_blocks)), cu = {0}, lens;
        for (int64_t i = 0; i < num_blocks; ++i) tables[i] = int32_t(i);
        for (int64_t s = 0; s < batch; ++s) {
            cu.push_back(int32_t(cu.back() + q_len));
            lens.push_back(int32_t(context));
        }
        std::vector<float> q(size_t(batch * q_len * heads * dim)), out(q.size());
        for (size_t i = 0; i < q.size(); ++i) q[i] = 0.01f * float(int(i % 17) - 8);
        size_t next = 0;
        double t = seconds_per_call([&] {
            KvCopy& c = kv[next++ % kv.size()];
            KvCacheLayer cache{c.k.get(),
                               c.v.get(),
                               kv_dtype,
                               num_blocks,
                               block,
                               kv_heads,
                               dim,
                               scaled ? c.k_scale.data() : nullptr,
                               scaled ? c.v_scale.data() : nullptr};
            paged_attention(q.data(), heads * dim, batch, cu.data(), lens.data(), tables.data(),
                            blocks_per_seq, cache, heads, 0.088f, out.data());
        });
        double kv_bytes =
            double(batch * context * kv_heads) * double(dim * element_bytes + (scaled ? 4 : 0)) * 2;
        std::printf("batch %2ld q_len %4ld context %4ld block %3ld: %8.3f ms  (KV read %.1f GB/s)\n",
                    long(batch), long(q_len), long(context), long(block), t * 1e3, kv_bytes / t / 1e9);
    }
}

}  // namespace

int main(int argc, char** argv) {
    int threads = 0;
    bool quick = false;
    std::string only;  // "linear", "int8" (the int8 weight kernels, only on request) or "attention"
    DType kv_dtype = DType::BF16;
    double kv_working_set = 256e6;  // bytes of KV copies the attention calls cycle through
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--kv-working-set") == 0 && i + 1 < argc) {
            char* end = nullptr;
            kv_working_set = std::strtod(argv[++i], &end);
            // At most the machine's memory: also rejects inf, whose copy count no size_t holds.
            const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
            if (end == argv[i] || *end != '\0' || !(kv_working_set >= 0) || !(kv_working_set <= memory)) {
                std::fprintf(
                    stderr,
                    "--kv-working-set: a number of bytes from 0 to this machine's memory (%.0f), not %s\n",
                    memory, argv[i]);
                return 2;
            }
        }
        if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::atoi(argv[++i]);
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        if (std::strcmp(argv[i], "--cpu-time") == 0) g_cpu_time = true;
        if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        if (std::strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            for (const char* p = argv[++i]; *p;) {
                char* end = nullptr;
                const long rows = std::strtol(p, &end, 10);
                if (end == p || rows < 1) {
                    std::fprintf(stderr, "--rows: a comma-separated list of positive counts, not %s\n",
                                 argv[i]);
                    return 2;
                }
                g_rows.push_back(rows);
                p = *end == ',' ? end + 1 : end;
            }
        }
        if (std::strcmp(argv[i], "--kv-dtype") == 0 && i + 1 < argc) {
            const std::string name = argv[++i];
            if (name != "bf16" && name != "int8" && name != "fp8") {
                std::fprintf(stderr, "--kv-dtype: bf16, int8 or fp8, not %s\n", name.c_str());
                return 2;
            }
            kv_dtype = name == "int8" ? DType::I8 : name == "fp8" ? DType::F8E4M3 : DType::BF16;
        }
    }
    lmrun::configure_threads(threads);
    std::printf("isa %s, %d threads%s\n", lmrun::isa_name(lmrun::kernel_isa()).c_str(), lmrun::num_threads(),
                g_cpu_time ? ", CPU time per call" : "");
    if (only.empty() || only == "linear") {
        bench_linear(DType::BF16, quick);
        bench_linear(DType::F32, quick);
    }
    if (only == "int8") bench_linear(DType::I8, quick);
    if (only.empty() || only == "attention") bench_attention(quick, kv_dtype, kv_working_set);
    return 0;
}
