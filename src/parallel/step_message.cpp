#include "parallel/step_message.h"

#include <cstring>

#include "core/check.h"

namespace lmrun::parallel {
namespace {

struct alignas(64) StepHeader {
    MessageKind kind = MessageKind::Step;
    uint32_t linear_path = 0;
    int64_t num_tokens = 0;
    int64_t num_padded_tokens = 0;
    int64_t num_seqs = 0;
    int64_t max_blocks_per_seq = 0;
    int64_t num_logit_rows = 0;
};

size_t array_bytes(int64_t count) {
    return (size_t(count) * sizeof(int32_t) + 63) / 64 * 64;
}

// The arrays in message order with their lengths.
struct ArrayLengths {
    int64_t tokens, seqs_plus_one, seqs, block_table, logit_rows;
};

ArrayLengths lengths_of(const StepHeader& header) {
    return {header.num_padded_tokens, header.num_seqs + 1, header.num_seqs,
            header.num_seqs * header.max_blocks_per_seq, header.num_logit_rows};
}

size_t message_bytes(const ArrayLengths& n) {
    return sizeof(StepHeader) + 3 * array_bytes(n.tokens) + array_bytes(n.seqs_plus_one) +
           array_bytes(n.seqs) + array_bytes(n.block_table) + array_bytes(n.logit_rows);
}

const StepHeader kShutdownHeader{MessageKind::Shutdown};

}  // namespace

size_t max_step_message_bytes(int64_t max_tokens, int64_t max_seqs, int64_t max_blocks_per_seq) {
    return message_bytes({max_tokens, max_seqs + 1, max_seqs, max_seqs * max_blocks_per_seq, max_seqs});
}

size_t encode_step(const ForwardContext& context, std::span<const int32_t> logit_rows,
                   std::span<std::byte> out) {
    StepHeader header;
    header.linear_path = uint32_t(context.linear_path);
    header.num_tokens = context.num_tokens;
    header.num_padded_tokens = context.num_padded_tokens;
    header.num_seqs = context.num_seqs;
    header.max_blocks_per_seq = context.max_blocks_per_seq;
    header.num_logit_rows = int64_t(logit_rows.size());
    const ArrayLengths n = lengths_of(header);
    const size_t total = message_bytes(n);
    LMRUN_CHECK(total <= out.size(), "step of %zu bytes exceeds the %zu-byte message buffer", total,
                out.size());
    std::byte* cursor = out.data();
    std::memcpy(cursor, &header, sizeof(header));
    cursor += sizeof(header);
    auto put = [&](const int32_t* array, int64_t count) {
        if (count > 0) std::memcpy(cursor, array, size_t(count) * sizeof(int32_t));
        cursor += array_bytes(count);
    };
    put(context.input_ids, n.tokens);
    put(context.positions, n.tokens);
    put(context.slot_mapping, n.tokens);
    put(context.cu_seqlens_q, n.seqs_plus_one);
    put(context.context_lens, n.seqs);
    put(context.block_tables, n.block_table);
    put(logit_rows.data(), n.logit_rows);
    return total;
}

std::span<const std::byte> shutdown_message() {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(&kShutdownHeader),
                                      sizeof(StepHeader));
}

ReceivedStep decode_step(std::span<const std::byte> message) {
    LMRUN_CHECK(message.size() >= sizeof(StepHeader), "step message of %zu bytes is too short",
                message.size());
    LMRUN_CHECK(reinterpret_cast<uintptr_t>(message.data()) % 64 == 0, "step messages are 64-byte aligned");
    const auto& header = *reinterpret_cast<const StepHeader*>(message.data());
    ReceivedStep step;
    step.kind = header.kind;
    if (header.kind != MessageKind::Step) return step;
    const ArrayLengths n = lengths_of(header);
    LMRUN_CHECK(message_bytes(n) == message.size(), "step message size does not match its header");
    ForwardContext& context = step.context;
    context.linear_path = LinearPath(header.linear_path);
    context.num_tokens = header.num_tokens;
    context.num_padded_tokens = header.num_padded_tokens;
    context.num_seqs = header.num_seqs;
    context.max_blocks_per_seq = header.max_blocks_per_seq;
    const std::byte* cursor = message.data() + sizeof(StepHeader);
    auto take = [&](int64_t count) {
        const auto* array = reinterpret_cast<const int32_t*>(cursor);
        cursor += array_bytes(count);
        return array;
    };
    context.input_ids = take(n.tokens);
    context.positions = take(n.tokens);
    context.slot_mapping = take(n.tokens);
    context.cu_seqlens_q = take(n.seqs_plus_one);
    context.context_lens = take(n.seqs);
    context.block_tables = take(n.block_table);
    step.logit_rows = std::span<const int32_t>(take(n.logit_rows), size_t(n.logit_rows));
    return step;
}

}  // namespace lmrun::parallel
