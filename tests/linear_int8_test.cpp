// int8 (W8A8) linear: the activation quantizer against its scalar twin, quantize/dequantize round
// trips, every ISA path against the scalar twin (exact integer sums), and the int8 result against
// the F32 product within the bound quantization allows.
#include "kernels/linear_int8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/linear.h"
#include "numeric_test_util.h"

namespace lmrun::kernels {
namespace {

using testing::random_vector;

using Int8LinearFn = void (*)(const float*, int64_t, const PackedLinear&, const float*, float*);

// Every int8 path this CPU can run (each is also reached through linear() at its ISA level).
std::vector<std::pair<std::string, Int8LinearFn>> int8_paths() {
    const CpuFeatures& f = cpu_features();
    std::vector<std::pair<std::string, Int8LinearFn>> paths = {{"avx2", linear_int8_avx2}};
    if (best_isa(f) >= Isa::Avx512) paths.push_back({"avx512", linear_int8_avx512});
    if (best_isa(f) >= Isa::Avx512Vnni) paths.push_back({"vnni", linear_int8_vnni});
    if (kernel_isa() == Isa::AmxBf16) paths.push_back({"amx", linear_int8_amx});
    return paths;
}

TEST(Int8Quantizer, MatchesScalarTwinBitForBit) {
    std::mt19937 rng(1);
    for (int64_t in : {1, 7, 31, 32, 33, 64, 100, 1000}) {
        const int64_t rows = 5, padded = (in + 63) / 64 * 64;
        std::vector<float> x = random_vector(size_t(rows * in), rng, 3.0f);
        for (int64_t k = 0; k < in; ++k) x[size_t(2 * in + k)] = 0.0f;  // an all-zero row
        x[size_t(3 * in + in / 2)] = 1e4f;                              // one huge outlier
        x[size_t(4 * in)] = -x[size_t(4 * in)] * 1e-30f;                // tiny values only
        for (bool offset : {false, true}) {
            std::vector<uint8_t> got(size_t(rows * padded), 0xAA);
            std::vector<float> scales(static_cast<size_t>(rows));
            quantize_rows_int8(x.data(), rows, in, padded, offset, got.data(), scales.data());
            for (int64_t r = 0; r < rows; ++r) {
                std::vector<int8_t> want(static_cast<size_t>(in));
                float want_scale = quantize_row_int8_reference(x.data() + r * in, in, want.data());
                ASSERT_EQ(scales[r], want_scale) << "row " << r << " in " << in;
                for (int64_t k = 0; k < padded; ++k) {
                    uint8_t expected = uint8_t(k < in ? want[k] : 0) ^ (offset ? 0x80 : 0);
                    ASSERT_EQ(got[size_t(r * padded + k)], expected)
                        << "row " << r << " k " << k << " in " << in;
                }
            }
            EXPECT_EQ(scales[2], 0.0f);  // all-zero row
        }
    }
}

TEST(Int8Quantizer, RoundTripErrorIsAtMostHalfAStep) {
    std::mt19937 rng(2);
    for (float range : {1e-6f, 1.0f, 300.0f}) {
        std::vector<float> x = random_vector(999, rng, range);
        x[17] = range * 50;  // an outlier sets the step for the whole row
        std::vector<int8_t> q(x.size());
        const float scale = quantize_row_int8_reference(x.data(), int64_t(x.size()), q.data());
        EXPECT_FLOAT_EQ(scale, range * 50 / 127.0f);
        for (size_t k = 0; k < x.size(); ++k) {
            ASSERT_GE(q[k], -127);
            ASSERT_LE(std::fabs(float(q[k]) * scale - x[k]), 0.5f * scale * (1 + 1e-5f)) << k;
        }
        EXPECT_EQ(q[17], 127);
    }
}

struct Int8Problem {
    int64_t rows, out, in;
};

class Int8Conformance : public ::testing::TestWithParam<Int8Problem> {};

// Σ_k |x| · |w| per output, and Σ_k |x| and Σ_k |w|: what the quantization error bound needs.
double row_abs_dot(const float* x, const float* w, int64_t in) {
    double sum = 0;
    for (int64_t k = 0; k < in; ++k) sum += std::fabs(double(x[k]) * w[k]);
    return sum;
}

TEST_P(Int8Conformance, EveryPathMatchesTheTwinAndTheF32Product) {
    const Int8Problem p = GetParam();
    std::mt19937 rng(unsigned(p.rows * 131 + p.out * 7 + p.in));
    std::vector<float> w = random_vector(size_t(p.out * p.in), rng);
    std::vector<float> x = random_vector(size_t(p.rows * p.in), rng, 2.0f);
    std::vector<float> bias = random_vector(size_t(p.out), rng);
    for (int64_t k = 0; k < p.in; ++k) w[size_t(k)] = 0.0f;  // output 0: an all-zero weight row
    if (p.out > 2) w[size_t(2 * p.in + p.in / 3)] = 40.0f;   // output 2: one huge weight
    if (p.rows > 1) {
        for (int64_t k = 0; k < p.in; ++k) x[size_t(p.in + k)] = 0.0f;  // row 1: all zero
    }
    if (p.rows > 2) x[size_t(2 * p.in + p.in / 2)] = 500.0f;  // row 2: one huge activation
    LinearWeight weight = LinearWeight::pack(w.data(), DType::F32, p.out, p.in, DType::I8);
    ASSERT_EQ(weight.storage_dtype(), DType::I8);
    EXPECT_GE(weight.nbytes(), size_t(p.out * p.in));

    const size_t y_count = size_t(p.rows * p.out);
    std::vector<float> twin(y_count), got(y_count);
    linear_reference(x.data(), p.rows, weight, bias.data(), twin.data());
    for (const auto& [name, fn] : int8_paths()) {
        std::fill(got.begin(), got.end(), NAN);
        fn(x.data(), p.rows, weight.packed(), bias.data(), got.data());
        for (size_t i = 0; i < y_count; ++i)  // exact integer sums: only the final scaling rounds
            ASSERT_NEAR(got[i], twin[i], 1e-5 * (std::fabs(twin[i]) + 1.0)) << name << " at " << i;
    }
    std::fill(got.begin(), got.end(), NAN);
    linear(x.data(), p.rows, weight, bias.data(), got.data());
    for (size_t i = 0; i < y_count; ++i) ASSERT_NEAR(got[i], twin[i], 1e-5 * (std::fabs(twin[i]) + 1.0));

    // Against the F32 product: x and w are each off by at most half their step, so the error is
    // at most sx/2 · Σ|w| + sw/2 · Σ|x| + sx · sw / 4 · in (plus float rounding).
    for (int64_t r = 0; r < p.rows; ++r) {
        const float* xr = x.data() + r * p.in;
        std::vector<int8_t> scratch(static_cast<size_t>(p.in));
        const double sx = quantize_row_int8_reference(xr, p.in, scratch.data());
        for (int64_t n = 0; n < p.out; ++n) {
            const float* wn = w.data() + n * p.in;
            const double sw = weight.packed().scales[n];
            double exact = bias[n], sum_x = 0, sum_w = 0;
            for (int64_t k = 0; k < p.in; ++k) {
                exact += double(xr[k]) * wn[k];
                sum_x += std::fabs(xr[k]);
                sum_w += std::fabs(wn[k]);
            }
            const double bound = sx / 2 * sum_w + sw / 2 * sum_x + sx * sw / 4 * double(p.in) +
                                 1e-5 * (row_abs_dot(xr, wn, p.in) + 1.0);
            ASSERT_NEAR(twin[size_t(r * p.out + n)], exact, bound) << "row " << r << " output " << n;
        }
    }
    // Zero rows give exactly the bias.
    for (int64_t n = 0; n < p.out && p.rows > 1; ++n) EXPECT_EQ(twin[size_t(p.out + n)], bias[n]);
    for (int64_t r = 0; r < p.rows; ++r) EXPECT_EQ(twin[size_t(r * p.out)], bias[0]);
}

std::vector<Int8Problem> int8_problems() {
    std::vector<Int8Problem> list;
    for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 13, 17, 19, 20, 33, 64, 100}) {
        list.push_back({rows, 17, 3});
        list.push_back({rows, 130, 200});
    }
    list.push_back({1, 1, 1});
    list.push_back({2, 65, 1000});
    list.push_back({1, 600, 130});  // one row: 10 tiles, 4 streams per thread and a partial last tile
    list.push_back({1, 448, 70});   // one row: 7 tiles, groups of 4 and 3 on one or two threads
    list.push_back({9, 64, 64});
    list.push_back({40, 200, 1024});
    list.push_back({600, 70, 1100});  // several x panels per pass over the weights (AMX)
    return list;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Int8Conformance, ::testing::ValuesIn(int8_problems()),
                         [](const ::testing::TestParamInfo<Int8Problem>& info) {
                             const Int8Problem& p = info.param;
                             return "r" + std::to_string(p.rows) + "_o" + std::to_string(p.out) + "_i" +
                                    std::to_string(p.in);
                         });

TEST(Int8Linear, PrequantizedWeightsPackAsGiven) {
    const int64_t out = 70, in = 45;
    std::vector<int8_t> q(size_t(out * in));
    std::vector<float> scales(static_cast<size_t>(out));
    std::mt19937 rng(4);
    for (int8_t& v : q) v = int8_t(int(rng() % 256) - 128);  // includes -128
    for (float& s : scales) s = float(rng() % 1000 + 1) * 1e-4f;
    LinearWeight weight = LinearWeight::pack_int8(q.data(), scales.data(), out, in);
    const PackedLinear& packed = weight.packed();
    for (int64_t n = 0; n < out; ++n) {
        EXPECT_EQ(packed.scales[n], scales[n]);
        int32_t sum = 0;
        for (int64_t k = 0; k < in; ++k) {
            const int8_t want = std::max<int8_t>(q[size_t(n * in + k)], -127);  // -128 clamps
            ASSERT_EQ(static_cast<const int8_t*>(packed.data)[packed_offset(packed, n, k)], want);
            sum += want;
        }
        EXPECT_EQ(packed.compensation[n], 128 * sum);
    }
    // Padding lanes and padded k are zero.
    const auto* bytes = static_cast<const int8_t*>(packed.data);
    for (int64_t k = in; k < packed.padded_in; ++k) ASSERT_EQ(bytes[packed_offset(packed, 3, k)], 0);
    for (int64_t n = out; n < packed.num_tiles * kTileOutputs; ++n)
        ASSERT_EQ(bytes[packed_offset(packed, n, 0)], 0);
}

}  // namespace
}  // namespace lmrun::kernels
