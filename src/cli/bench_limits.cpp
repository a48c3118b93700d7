#include "cli/bench_limits.h"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/parallel.h"
#include "core/timer.h"
#include "kernels/linear.h"
#include "kernels/linear_onednn.h"

namespace lmrun::cli {
namespace {

// Sums [begin, end) the way the decode GEMV reads weights: in groups of kStreams neighbouring
// 128 KiB blocks walked in lockstep (several sequential streams in flight per thread; one
// stream per thread leaves bandwidth unused on this machine class), with two accumulators per
// stream so the adds never limit the loads.
float sum_streams(const float* data, int64_t begin, int64_t end) {
    constexpr int kStreams = 4;
    constexpr int64_t kBlock = 32768;  // floats: 128 KiB, one packed weight tile's size
    __m256 sums[kStreams][2];
    for (auto& stream : sums) stream[0] = stream[1] = _mm256_setzero_ps();
    int64_t group = begin;
    for (; group + kStreams * kBlock <= end; group += kStreams * kBlock) {
        for (int64_t i = 0; i < kBlock; i += 16) {
            for (int s = 0; s < kStreams; ++s) {
                const float* at = data + group + s * kBlock + i;
                sums[s][0] = _mm256_add_ps(sums[s][0], _mm256_loadu_ps(at));
                sums[s][1] = _mm256_add_ps(sums[s][1], _mm256_loadu_ps(at + 8));
            }
        }
    }
    __m256 total = _mm256_setzero_ps();
    for (auto& stream : sums) total = _mm256_add_ps(total, _mm256_add_ps(stream[0], stream[1]));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, total);
    float result = 0;
    for (float lane : lanes) result += lane;
    for (; group < end; ++group) result += data[group];  // the tail
    return result;
}

}  // namespace

double measure_read_bandwidth(int64_t buffer_bytes, int repeats) {
    const int64_t count = buffer_bytes / int64_t(sizeof(float));
    // On huge pages like the packed weights and the KV arena: with 4 KiB pages the TLB misses,
    // not the DRAM, would set the figure.
    constexpr size_t kHugePage = size_t(2) << 20;
    const size_t bytes = (size_t(buffer_bytes) + kHugePage - 1) / kHugePage * kHugePage;
    std::unique_ptr<float, decltype(&std::free)> buffer(
        static_cast<float*>(std::aligned_alloc(kHugePage, bytes)), &std::free);
    if (!buffer) return 0;
    madvise(buffer.get(), bytes, MADV_HUGEPAGE);
    parallel_for(count, [&](int64_t begin, int64_t end) {  // each thread faults in its own part
        std::fill(buffer.get() + begin, buffer.get() + end, 1.0f);
    });
    std::vector<double> rates;
    volatile float sink = 0;
    for (int r = 0; r < repeats + 1; ++r) {
        Stopwatch timer;
        std::vector<float> partial(size_t(omp_get_max_threads()), 0.0f);
        parallel_for(count, [&](int64_t begin, int64_t end) {
            partial[size_t(omp_get_thread_num())] += sum_streams(buffer.get(), begin, end);
        });
        double seconds = timer.elapsed_seconds();
        for (float p : partial) sink = sink + p;
        if (r > 0) rates.push_back(double(buffer_bytes) / seconds);  // the first run warms up
    }
    // A limit is what the machine can do: the best run (others lose to noise, not to the code).
    return *std::max_element(rates.begin(), rates.end());
}

void measure_gemm_peak(MachineLimits& limits, DType storage, int repeats) {
    constexpr int64_t kRows = 512, kOut = 4096, kIn = 4096;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    std::vector<float> w(size_t(kOut * kIn)), x(size_t(kRows * kIn)), y(size_t(kRows * kOut));
    for (float& v : w) v = dist(rng);
    for (float& v : x) v = dist(rng);
    kernels::LinearWeight weight = kernels::LinearWeight::pack(w.data(), DType::F32, kOut, kIn, storage);
    const double flops = 2.0 * double(kRows) * double(kOut) * double(kIn);
    auto rate = [&](auto&& call) {
        call();  // warm-up: primitive creation, first touch
        std::vector<double> rates;
        for (int r = 0; r < repeats; ++r) {
            Stopwatch timer;
            call();
            rates.push_back(flops / timer.elapsed_seconds());
        }
        return *std::max_element(rates.begin(), rates.end());
    };
    double engine = rate([&] { kernels::linear(x.data(), kRows, weight, nullptr, y.data()); });
    // Where oneDNN has no kernel for these weights (AVX2: no BF16; int8 weights are ours alone)
    // linear_onednn computes nothing and returns at once: its "rate" would be meaningless.
    limits.onednn_flops_per_s = 0;
    if (storage == DType::BF16 && kernels::linear_onednn(x.data(), kRows, weight, nullptr, y.data())) {
        limits.onednn_flops_per_s =
            rate([&] { kernels::linear_onednn(x.data(), kRows, weight, nullptr, y.data()); });
    }
    limits.gemm_flops_per_s = std::max(engine, limits.onednn_flops_per_s);
}

MachineLimits measure_machine_limits(DType weight_storage) {
    MachineLimits limits;
    limits.read_bytes_per_s = measure_read_bandwidth();
    measure_gemm_peak(limits, weight_storage);
    return limits;
}

double roofline_seconds(const MachineLimits& limits, double weight_bytes, double flops) {
    return std::max(weight_bytes / limits.read_bytes_per_s, flops / limits.gemm_flops_per_s);
}

}  // namespace lmrun::cli
