// A step travels as plain arrays: what rank 0 encodes, a worker decodes into a ForwardContext
// whose arrays hold the same values (and point into the message), for prefill and decode.
#include "parallel/step_message.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace lmrun::parallel {
namespace {

template <typename T>
std::vector<T> view(const T* data, int64_t count) {
    return std::vector<T>(data, data + count);
}

TEST(StepMessage, ADecodedStepHasTheEncodedContextAndRows) {
    std::vector<int32_t> ids = {5, 6, 7, 8, 9}, positions = {0, 1, 2, 3, 7}, slots = {33, 34, 35, 36, -1};
    std::vector<int32_t> cu_q = {0, 4, 5}, context_lens = {4, 8};
    std::vector<int32_t> block_tables = {3, 0, 0, 9, 2, 1};  // 2 sequences x 3 blocks
    std::vector<int32_t> rows = {3, 4};
    ForwardContext context;
    context.linear_path = LinearPath::AllocationFree;
    context.num_tokens = 4;
    context.num_padded_tokens = 5;
    context.num_seqs = 2;
    context.max_blocks_per_seq = 3;
    context.input_ids = ids.data();
    context.positions = positions.data();
    context.slot_mapping = slots.data();
    context.cu_seqlens_q = cu_q.data();
    context.context_lens = context_lens.data();
    context.block_tables = block_tables.data();

    const size_t capacity = max_step_message_bytes(5, 2, 3);
    std::byte* buffer = static_cast<std::byte*>(std::aligned_alloc(64, (capacity + 63) / 64 * 64));
    const size_t size = encode_step(context, rows, std::span<std::byte>(buffer, capacity));
    EXPECT_LE(size, capacity);
    ReceivedStep step = decode_step(std::span<const std::byte>(buffer, size));
    ASSERT_EQ(step.kind, MessageKind::Step);
    const ForwardContext& got = step.context;
    EXPECT_EQ(got.linear_path, LinearPath::AllocationFree);
    EXPECT_EQ(got.num_tokens, 4);
    EXPECT_EQ(got.num_padded_tokens, 5);
    EXPECT_EQ(got.num_seqs, 2);
    EXPECT_EQ(got.max_blocks_per_seq, 3);
    EXPECT_EQ(view(got.input_ids, 5), ids);
    EXPECT_EQ(view(got.positions, 5), positions);
    EXPECT_EQ(view(got.slot_mapping, 5), slots);
    EXPECT_EQ(view(got.cu_seqlens_q, 3), cu_q);
    EXPECT_EQ(view(got.context_lens, 2), context_lens);
    EXPECT_EQ(view(got.block_tables, 6), block_tables);
    EXPECT_EQ(std::vector<int32_t>(step.logit_rows.begin(), step.logit_rows.end()), rows);
    // Zero-copy: the arrays live inside the message.
    EXPECT_GE(reinterpret_cast<const std::byte*>(got.block_tables), buffer);
    EXPECT_LT(reinterpret_cast<const std::byte*>(got.block_tables), buffer + size);
    std::free(buffer);
}

TEST(StepMessage, TheShutdownMessageDecodesAsShutdown) {
    EXPECT_EQ(decode_step(shutdown_message()).kind, MessageKind::Shutdown);
}

}  // namespace
}  // namespace lmrun::parallel
