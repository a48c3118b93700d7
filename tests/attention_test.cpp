#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/attention_tile.h"

namespace lmrun::kernels {
namespace {

struct SeqShape {
    int32_t q_len, context_len;
};

struct Scenario {
    int64_t head_dim, block_size, num_heads, num_kv_heads;
    DType dtype;
    std::vector<SeqShape> seqs;
};

std::string scenario_name(const Scenario& s) {
    return std::string(dtype_name(s.dtype)) + "_d" + std::to_string(s.head_dim) + "_b" +
           std::to_string(s.block_size) + "_h" + std::to_string(s.num_heads) + "_kv" +
           std::to_string(s.num_kv_heads) + "_s" + std::to_string(s.seqs.size());
}

void PrintTo(const Scenario& s, std::ostream* os) {
    *os << scenario_name(s);
}

// Rewrites the keys and values of the token at `position` (all KV heads, [num_kv_heads][head_dim]
// each) before they are stored.
using KvEdit = std::function<void(int64_t position, float* k, float* v)>;

// A filled paged cache with shuffled block ids, the batch's metadata and its queries.
struct Batch {
    Scenario s;
    std::vector<float> k_store, v_store;    // backing memory of the cache (as floats)
    std::vector<float> k_scales, v_scales;  // I8 / F8E4M3 caches
    KvCacheLayer cache;
    std::vector<int32_t> cu_seqlens_q, context_lens, block_tables;
    int64_t max_blocks = 0, q_stride = 0, num_tokens = 0;
    std::vector<float> q;
};

Batch make_batch(const Scenario& s, unsigned seed, const KvEdit& edit = {}) {
    Batch b;
    b.s = s;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    int64_t num_blocks = 0;
    for (const SeqShape& seq : s.seqs) {
        int64_t blocks = (seq.context_len + s.block_size - 1) / s.block_size;
        b.max_blocks = std::max(b.max_blocks, blocks);
        num_blocks += blocks;
    }
    num_blocks += 3;  // unused blocks in between
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    int64_t row = s.num_kv_heads * s.head_dim;
    size_t cache_floats = size_t(num_blocks * s.block_size * row);
    // BF16 caches use half of the same backing store.
    b.k_store.assign(cache_floats, NAN);
    b.v_store.assign(cache_floats, NAN);
    b.cache = {b.k_store.data(), b.v_store.data(), s.dtype,   num_blocks,
               s.block_size,     s.num_kv_heads,   s.head_dim};
    if (kv_dtype_is_scaled(s.dtype)) {
        b.k_scales.assign(size_t(num_blocks * s.block_size * s.num_kv_heads), NAN);
        b.v_scales = b.k_scales;
        b.cache.k_scale = b.k_scales.data();
        b.cache.v_scale = b.v_scales.data();
    }
    b.block_tables.assign(size_t(s.seqs.size() * b.max_blocks), -1);
    b.cu_seqlens_q = {0};
    size_t next_id = 0;
    // K/V are stored through store_kvcache, as the engine does: token stride > row (a qkv buffer).
    int64_t kv_stride = 2 * row + 5;
    for (size_t i = 0; i < s.seqs.size(); ++i) {
        const SeqShape& seq = s.seqs[i];
        int64_t blocks = (seq.context_len + s.block_size - 1) / s.block_size;
        for (int64_t j = 0; j < blocks; ++j) b.block_tables[i * b.max_blocks + j] = ids[next_id++];
        std::vector<float> kv(size_t(seq.context_len * kv_stride));
        for (float& x : kv) x = dist(rng);
        if (edit)
            for (int64_t p = 0; p < seq.context_len; ++p)
                edit(p, &kv[p * kv_stride], &kv[p * kv_stride + row]);
        std::vector<int32_t> slots(size_t(seq.context_len));
        for (int32_t p = 0; p < seq.context_len; ++p)
            slots[p] = b.block_tables[i * b.max_blocks + p / s.block_size] * int32_t(s.block_size) +
                       p % int32_t(s.block_size);
        store_kvcache(kv.data(), kv.data() + row, kv_stride, seq.context_len, slots.data(), b.cache);
        b.cu_seqlens_q.push_back(b.cu_seqlens_q.back() + seq.q_len);
        b.context_lens.push_back(seq.context_len);
    }
    b.num_tokens = b.cu_seqlens_q.back();
    b.q_stride = s.num_heads * s.head_dim + 2 * row;  // q inside a packed qkv row
    b.q.resize(size_t(b.num_tokens * b.q_stride));
    for (float& x : b.q) x = dist(rng) * 2.0f;
    return b;
}

void run_attention(const Batch& b, Isa isa, bool reference, std::vector<float>& out) {
    out.assign(size_t(b.num_tokens * b.s.num_heads * b.s.head_dim), NAN);
    float scale = 1.0f / std::sqrt(float(b.s.head_dim));
    int64_t num_seqs = int64_t(b.s.seqs.size());
    if (reference) {
        paged_attention_reference(b.q.data(), b.q_stride, num_seqs, b.cu_seqlens_q.data(),
                                  b.context_lens.data(), b.block_tables.data(), b.max_blocks, b.cache,
                                  b.s.num_heads, scale, out.data());
        return;
    }
    AttentionArgs args{b.q.data(),
                       b.q_stride,
                       b.cu_seqlens_q.data(),
                       b.context_lens.data(),
                       b.block_tables.data(),
                       b.max_blocks,
                       b.cache,
                       b.s.num_heads,
                       scale,
                       out.data()};
    paged_attention_for_isa(isa, args, num_seqs);
}

// F32 math matches the double reference to 2e-5. The AVX512_BF16 decode path on a BF16 cache
// rounds q and the softmax weights to BF16 (as GPU flash attention does): each output within
// 2e-2 (|v| <= 1, |q| <= 2, d <= 128) and the mean error under 2e-3, so a wrong key, scale or
// lane order still fails. The integer decode tiles on an I8 cache (AVX512_VNNI, and AVX2's
// vpmaddwd one) round q and the softmax weights to 16-bit integers (relative steps of 2^-15):
// measured within 1.7e-5 of the reference, 1.6e-6 on average; held to 1e-4 and 1e-5. The AMX and AVX512_BF16
// prefill tiles round q and the weights to BF16 on int8 and fp8 caches too (their bytes enter the tiles
// exactly), so a batch with prefill rows (has_prefill) is held to the BF16 bounds there.
void expect_matches(const std::vector<float>& got, const std::vector<float>& want, Isa isa, DType cache_dtype,
                    bool has_prefill, const std::string& what) {
    const bool scaled_prefill = kv_dtype_is_scaled(cache_dtype) && has_prefill;
    const bool rounded = (isa >= Isa::Avx512Bf16 && (cache_dtype == DType::BF16 || scaled_prefill)) ||
                         (isa >= Isa::AmxBf16 && kv_dtype_is_scaled(cache_dtype));
    const bool quantized = (isa == Isa::Avx2 || isa >= Isa::Avx512Vnni) && cache_dtype == DType::I8;
    const double max_error = rounded ? 2e-2 : quantized ? 1e-4 : 2e-5;
    const double mean_error = rounded ? 2e-3 : quantized ? 1e-5 : 2e-5;
    double total_error = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], max_error) << what << " at " << i;
        total_error += std::fabs(double(got[i]) - want[i]);
    }
    EXPECT_LT(total_error / double(want.size()), mean_error) << what;
}

class PagedAttention : public ::testing::TestWithParam<Scenario> {};

TEST_P(PagedAttention, EveryIsaMatchesReference) {
    Batch b = make_batch(GetParam(), 42);
    std::vector<float> want, got;
    run_attention(b, Isa::Avx2, true, want);
    for (float x : want) ASSERT_TRUE(std::isfinite(x));
    const bool has_prefill =
        std::any_of(b.s.seqs.begin(), b.s.seqs.end(), [](const SeqShape& seq) { return seq.q_len > 1; });
    std::vector<Isa> isas = {Isa::Avx2};
    if (kernel_isa() >= Isa::Avx512) isas.push_back(Isa::Avx512);
    if (kernel_isa() >= Isa::Avx512Vnni) isas.push_back(Isa::Avx512Vnni);
    if (kernel_isa() >= Isa::Avx512Bf16) isas.push_back(Isa::Avx512Bf16);
    if (kernel_isa() >= Isa::AmxBf16) isas.push_back(Isa::AmxBf16);
    for (Isa isa : isas) {
        run_attention(b, isa, false, got);
        expect_matches(got, want, isa, b.s.dtype, has_prefill, isa_name(isa));
    }
    // The public entry point (kernel_isa() dispatch) and a second call on warm scratch.
    float scale = 1.0f / std::sqrt(float(b.s.head_dim));
    for (int repeat = 0; repeat < 2; ++repeat) {
        got.assign(want.size(), NAN);
        paged_attention(b.q.data(), b.q_stride, int64_t(b.s.seqs.size()), b.cu_seqlens_q.data(),
                        b.context_lens.data(), b.block_tables.data(), b.max_blocks, b.cache, b.s.num_heads,
                        scale, got.data());
        expect_matches(got, want, kernel_isa(), b.s.dtype, has_prefill, "dispatched");
    }
}

std::vector<Scenario> scenarios() {
    // Mixed batches: decode (q_len 1), whole prefill (q_len = context), chunked prefill with a
    // cached prefix, sequences ending exactly on and just past block boundaries.
    std::vector<SeqShape> mixed = {{1, 1}, {1, 37}, {5, 5}, {17, 40}, {1, 300}, {3, 16}, {70, 129}};
    std::vector<Scenario> list;
    for (DType dtype : {DType::F32, DType::BF16, DType::I8, DType::F8E4M3}) {
        for (int64_t ratio : {1, 2, 4, 8}) list.push_back({128, 16, 8, 8 / ratio, dtype, mixed});
        list.push_back({64, 256, 4, 2, dtype, mixed});
        list.push_back({8, 16, 4, 1, dtype, mixed});  // stories260k-like
        list.push_back({32, 16, 6, 3, dtype, mixed});
        list.push_back({80, 16, 2, 1, dtype, {{1, 33}, {9, 20}}});   // no AVX-512 specialisation
        list.push_back({17, 256, 3, 3, dtype, {{2, 2}, {1, 300}}});  // odd head_dim
        list.push_back({256, 16, 4, 1, dtype, {{3, 50}}});
        // Decode-only batches: tiles over all KV heads of a sequence (GQA groups 1, 2, 3, 4),
        // contexts ending inside, on and past blocks, odd key counts in the last chunk.
        std::vector<SeqShape> decode = {{1, 1}, {1, 17}, {1, 33}, {1, 300}, {1, 47}};
        list.push_back({128, 16, 8, 8, dtype, decode});
        list.push_back({128, 16, 8, 4, dtype, decode});
        list.push_back({64, 256, 6, 2, dtype, decode});
        list.push_back({32, 16, 8, 2, dtype, decode});
    }
    // Few work items with long key ranges: split-K (key range cut over threads, then merged);
    // one work item always splits, whatever the thread count.
    list.push_back({128, 16, 8, 1, DType::BF16, {{1, 3000}}});
    list.push_back({64, 256, 4, 2, DType::F32, {{5, 1500}}});  // causal rows inside each split
    list.push_back({32, 16, 2, 1, DType::F32, {{1, 600}}});
    list.push_back({64, 16, 4, 1, DType::BF16, {{1, 2000}, {1, 1}}});  // some splits empty
    list.push_back({128, 16, 8, 1, DType::I8, {{1, 3000}}});
    // One long prefill must be split into many tiles (more work items than threads).
    list.push_back({64, 16, 4, 1, DType::F32, {{300, 300}}});
    // Long BF16 prefills (AMX: several 256-key segments per tile, rows seeing part of one),
    // a chunk after a cached prefix, GQA groups of 2 and 4, every AMX head_dim.
    list.push_back({128, 16, 16, 8, DType::BF16, {{300, 300}, {45, 600}, {3, 257}}});
    list.push_back({256, 256, 8, 2, DType::BF16, {{130, 530}}});
    list.push_back({32, 16, 4, 4, DType::BF16, {{513, 513}}});
    list.push_back({64, 16, 12, 3, DType::BF16, {{100, 100}, {17, 290}}});
    // The same on int8 and fp8 caches (AMX: the bytes as BF16, the scales on S and P's columns).
    for (DType dtype : {DType::I8, DType::F8E4M3}) {
        list.push_back({128, 16, 16, 8, dtype, {{300, 300}, {45, 600}, {3, 257}}});
        list.push_back({64, 16, 12, 3, dtype, {{100, 100}, {17, 290}}});
    }
    return list;
}

// Long contexts: 4k decode plus a chunk at the end of a 4k prompt. The same tiles and splits as
// the shorter scenarios over more keys, where rounding accumulates: a suite of its own, which the
// sanitizer job leaves out (these three are a third of its attention time; CMakeLists.txt).
std::vector<Scenario> long_context_scenarios() {
    return {{128, 16, 16, 8, DType::BF16, {{1, 4096}, {4, 4000}}},
            {64, 256, 4, 4, DType::F32, {{1, 4096}, {2, 4097}}},
            {128, 16, 16, 8, DType::F8E4M3, {{1, 4096}, {4, 4000}}}};
}

std::string scenario_test_name(const ::testing::TestParamInfo<Scenario>& info) {
    return scenario_name(info.param) + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttention, ::testing::ValuesIn(scenarios()), scenario_test_name);
INSTANTIATE_TEST_SUITE_P(LongContexts, PagedAttention, ::testing::ValuesIn(long_context_scenarios()),
                         scenario_test_name);

// int8 / fp8 caches against an F32 cache of the same keys and values: only the rounding of the
// stored rows differs (int8: half a step of max|row| / 127; fp8: 2^-4 relative), so outputs
// (weighted means of values in [-1, 1]) stay within a few hundredths, and on average far closer.
TEST(PagedAttention, ScaledCachesTrackAnF32Cache) {
    std::vector<SeqShape> seqs = {{1, 300}, {1, 47}, {9, 70}};
    for (DType dtype : {DType::I8, DType::F8E4M3}) {
        for (int64_t head_dim : {128, 64, 17}) {
            Batch exact = make_batch({head_dim, 16, 8, 4, DType::F32, seqs}, 7);
            Batch quantized = make_batch({head_dim, 16, 8, 4, dtype, seqs}, 7);  // same values
            std::vector<float> want, got;
            run_attention(exact, kernel_isa(), false, want);
            float scale = 1.0f / std::sqrt(float(head_dim));
            got.assign(want.size(), NAN);
            paged_attention(quantized.q.data(), quantized.q_stride, int64_t(seqs.size()),
                            quantized.cu_seqlens_q.data(), quantized.context_lens.data(),
                            quantized.block_tables.data(), quantized.max_blocks, quantized.cache, 8, scale,
                            got.data());
            double total = 0;
            for (size_t i = 0; i < want.size(); ++i) {
                ASSERT_NEAR(got[i], want[i], dtype == DType::I8 ? 0.02 : 0.05)
                    << dtype_name(dtype) << " " << i;
                total += std::fabs(got[i] - want[i]);
            }
            EXPECT_LT(total / double(want.size()), dtype == DType::I8 ? 3e-3 : 1e-2) << dtype_name(dtype);
        }
    }
}

// The int8 decode tiles with integer dot products (AVX2's vpmaddwd, attention_decode_int8_avx2.cpp,
// and AVX512_VNNI's, attention_decode_int8_avx512.cpp) against the scalar reference on the rows that stress
// its two roundings (q to int16 per row, p · v_scale to int16 per row and chunk) and its edges: all-zero key
// and value rows (scale 0), a key row and a value row with one outlier (its other elements round to 0 in the
// cache; a value outlier sets the chunk's weight step), a query row with one outlier (every other element of
// it rounds coarsely), every head_dim it is built for, GQA groups of 1, 2 (its row pairs) and 3 (a pair and a
// single row), blocks of 16 and 20 (chunks of 16 then 4), contexts ending inside, on and past chunks, and one
// long context split over threads (split-K). (The AVX2 tile takes head_dim 32 and up; at 16 the widening tile
// runs, exact but still checked.)
TEST(PagedAttention, Int8DecodeTilesOnExtremeRows) {
    std::vector<Isa> isas = {Isa::Avx2};
    if (kernel_isa() >= Isa::Avx512Vnni) isas.push_back(Isa::Avx512Vnni);
    struct Case {
        int64_t head_dim, block_size, num_heads, num_kv_heads;
        std::vector<SeqShape> seqs;
    };
    std::vector<Case> cases;
    const std::vector<SeqShape> decode = {{1, 1},  {1, 15}, {1, 16},  {1, 17},
                                          {1, 33}, {1, 47}, {1, 100}, {1, 301}};
    for (int64_t head_dim : {16, 32, 64, 128, 256})
        for (auto [heads, kv_heads] : {std::pair<int64_t, int64_t>{2, 1}, {6, 2}, {8, 8}})
            for (int64_t block : {16, 20}) cases.push_back({head_dim, block, heads, kv_heads, decode});
    cases.push_back({128, 16, 2, 1, {{1, 3000}}});
    for (const Case& c : cases) {
        const int64_t d = c.head_dim;
        KvEdit edit = [&](int64_t pos, float* k, float* v) {  // KV head 0 of every sequence
            if (pos % 5 == 2) std::fill(k, k + d, 0.0f);
            if (pos % 7 == 4) std::fill(v, v + d, 0.0f);
            if (pos % 11 == 9) k[3] = 40.0f;
            if (pos % 13 == 6) v[5] = -60.0f;
        };
        Batch b = make_batch({d, c.block_size, c.num_heads, c.num_kv_heads, DType::I8, c.seqs}, 11, edit);
        for (int64_t t = 0; t < b.num_tokens; t += 2) b.q[t * b.q_stride + 7] *= 30.0f;  // head 0
        std::vector<float> want, got;
        run_attention(b, Isa::Avx2, true, want);
        for (Isa isa : isas) {
            run_attention(b, isa, false, got);
            double max_error = 0, total = 0, max_ref = 0;
            for (size_t i = 0; i < want.size(); ++i) {
                ASSERT_TRUE(std::isfinite(got[i])) << i;
                max_error = std::max(max_error, std::fabs(double(got[i]) - want[i]));
                total += std::fabs(double(got[i]) - want[i]);
                max_ref = std::max(max_ref, std::fabs(double(want[i])));
            }
            // Measured (VNNI): at most 0.021 where outputs reach 19.5 (the query and key outliers
            // meet), else under 6e-3; means under 4e-5. With 8-bit q and p this test saw errors of 6.4.
            const std::string what = std::string(isa_name(isa)) + " d" + std::to_string(d) + " block " +
                                     std::to_string(c.block_size) + " heads " + std::to_string(c.num_heads) +
                                     "/" + std::to_string(c.num_kv_heads);
            EXPECT_LT(max_error, 2e-3 * std::max(1.0, max_ref)) << what;
            EXPECT_LT(total / double(want.size()), 1e-4) << what;
        }
    }
}

// What the integer decode tiles' own roundings of q and p add to an int8 cache's error, on
// decode batches of ordinary rows: their distance to an F32 cache of the same keys and values
// (the exact answer), against the reference's on the int8 cache (the cache's rounding alone).
TEST(PagedAttention, Int8DecodeTilesAddLittleToTheCacheRounding) {
    std::vector<Isa> isas = {Isa::Avx2};
    if (kernel_isa() >= Isa::Avx512Vnni) isas.push_back(Isa::Avx512Vnni);
    const std::vector<SeqShape> seqs = {{1, 300}, {1, 47}, {1, 1000}, {1, 129}};
    for (int64_t head_dim : {128, 64, 32}) {
        Batch exact = make_batch({head_dim, 16, 16, 8, DType::F32, seqs}, 5);
        Batch quantized = make_batch({head_dim, 16, 16, 8, DType::I8, seqs}, 5);  // same values
        std::vector<float> want, widened, tile;
        run_attention(exact, Isa::Avx2, true, want);
        run_attention(quantized, Isa::Avx2, true, widened);
        double widened_error = 0;
        for (size_t i = 0; i < want.size(); ++i) widened_error += std::fabs(double(widened[i]) - want[i]);
        EXPECT_GT(widened_error, 0.0);  // the int8 cache does round
        for (Isa isa : isas) {
            run_attention(quantized, isa, false, tile);
            double tile_error = 0;
            for (size_t i = 0; i < want.size(); ++i) tile_error += std::fabs(double(tile[i]) - want[i]);
            // Measured (VNNI): the same mean error to 3 digits (8-bit q and p added 26-29%).
            EXPECT_LT(tile_error, 1.02 * widened_error) << isa_name(isa) << " head_dim " << head_dim;
        }
    }
}

TEST(StoreKvCache, QuantizesEachTokenAndHeadWithItsOwnScale) {
    for (DType dtype : {DType::I8, DType::F8E4M3}) {
        const int64_t num_blocks = 2, block_size = 4, heads = 2, dim = 5, row = heads * dim;
        std::vector<uint8_t> k_mem(size_t(num_blocks * block_size * row)), v_mem = k_mem;
        std::vector<float> k_scale(size_t(num_blocks * block_size * heads), -1.0f), v_scale = k_scale;
        KvCacheLayer cache{k_mem.data(), v_mem.data(), dtype,          num_blocks,    block_size,
                           heads,        dim,          k_scale.data(), v_scale.data()};
        // Token 0: head 0 all zero, head 1 with an outlier; token 1 skipped.
        std::vector<float> k = {0, 0, 0, 0, 0, 0.01f, -0.02f, 1000.0f, 0.5f, -3.0f,
                                9, 9, 9, 9, 9, 9,     9,      9,       9,    9};
        std::vector<float> v = k;
        for (float& x : v) x = -x;
        std::vector<int32_t> slots = {6, -1};
        store_kvcache(k.data(), v.data(), row, 2, slots.data(), cache);
        const float max_code = dtype == DType::I8 ? 127.0f : kFp8E4M3Max;
        EXPECT_EQ(k_scale[6 * heads + 0], 0.0f);
        // int8: max / 127; fp8: one of the searched scales max / 448 · 2^(j/4) (kv_quantize.h).
        const float ratio = k_scale[6 * heads + 1] / (1000.0f / max_code);
        EXPECT_GE(ratio, 0.9999f);
        EXPECT_LE(ratio, dtype == DType::I8 ? 1.0001f : 1.7f);
        EXPECT_EQ(v_scale[6 * heads + 1], k_scale[6 * heads + 1]);
        for (int64_t d = 0; d < dim; ++d) {
            EXPECT_EQ(kv_byte_value(dtype, k_mem[6 * row + d]), 0.0f);
            const float value = kv_byte_value(dtype, k_mem[6 * row + dim + d]) * k_scale[6 * heads + 1];
            // int8: half a step; fp8: half a step of its 3-bit mantissa, or of its subnormals (2^-9).
            const float tolerance = dtype == DType::I8 ? 0.5f * k_scale[6 * heads + 1]
                                                       : std::max(std::fabs(k[dim + d]) / 16,
                                                                  std::ldexp(k_scale[6 * heads + 1], -10));
            EXPECT_NEAR(value, k[dim + d], tolerance + 1e-6f) << d;
            EXPECT_EQ(kv_byte_value(dtype, v_mem[6 * row + dim + d]),
                      -kv_byte_value(dtype, k_mem[6 * row + dim + d]));
        }
        // The outlier sets the scale: it is stored near the top of the code range.
        EXPECT_GE(kv_byte_value(dtype, k_mem[6 * row + dim + 2]), dtype == DType::I8 ? 127.0f : 256.0f);
        for (size_t i = 0; i < k_scale.size(); ++i) {
            if (i != 6 * heads && i != 6 * heads + 1) {
                EXPECT_EQ(k_scale[i], -1.0f) << i;  // padding wrote nothing
            }
        }
    }
}

TEST(StoreKvCache, WritesSlotsAndSkipsPadding) {
    for (DType dtype : {DType::F32, DType::BF16}) {
        int64_t num_blocks = 3, block_size = 4, heads = 2, dim = 3, row = heads * dim, stride = 10;
        std::vector<float> k_mem(size_t(num_blocks * block_size * row), -7.0f), v_mem = k_mem;
        KvCacheLayer cache{k_mem.data(), v_mem.data(), dtype, num_blocks, block_size, heads, dim};
        std::vector<float> k(3 * stride), v(3 * stride);
        for (size_t i = 0; i < k.size(); ++i) {
            k[i] = 0.5f * float(i);
            v[i] = -0.25f * float(i);
        }
        std::vector<int32_t> slots = {9, -1, 0};
        store_kvcache(k.data(), v.data(), stride, 3, slots.data(), cache);
        auto read = [&](const std::vector<float>& mem, int64_t index) {
            if (dtype == DType::F32) return mem[index];
            return bf16_to_f32(reinterpret_cast<const uint16_t*>(mem.data())[index]);
        };
        for (int64_t e = 0; e < row; ++e) {
            EXPECT_EQ(read(k_mem, 9 * row + e), k[e]);
            EXPECT_EQ(read(v_mem, 9 * row + e), v[e]);
            EXPECT_EQ(read(k_mem, 0 * row + e), k[2 * stride + e]);
            EXPECT_EQ(read(v_mem, 0 * row + e), v[2 * stride + e]);
        }
        // Every other slot is untouched (the padding token wrote nowhere).
        for (int64_t slot = 1; slot < num_blocks * block_size; ++slot) {
            if (slot == 9) continue;
            for (int64_t e = 0; e < row; ++e)
                EXPECT_EQ(read(k_mem, slot * row + e),
                          dtype == DType::F32
                              ? -7.0f
                              : bf16_to_f32(reinterpret_cast<const uint16_t*>(k_mem.data())[slot * row + e]))
                    << slot;
        }
    }
}

}  // namespace
}  // namespace lmrun::kernels
