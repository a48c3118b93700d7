// What rank 0 sends the other ranks for each step: the ForwardContext that prepare_prefill /
// prepare_decode built (its sizes, and the arrays input_ids, positions, slot_mapping,
// cu_seqlens_q, context_lens, block_tables) and the token rows whose logits are wanted.
// Plain int32 arrays behind a fixed header, each on a 64-byte boundary, so a worker's
// ForwardContext points straight into the received message: no objects are serialised and
// nothing is copied on the receiving side. Rank 0 is trusted: sizes are checked as invariants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "model/forward_context.h"

namespace lmrun::parallel {

enum class MessageKind : uint32_t { Step = 1, Shutdown = 2 };

// Bytes of the largest step a runner of these limits can send.
size_t max_step_message_bytes(int64_t max_tokens, int64_t max_seqs, int64_t max_blocks_per_seq);

// Writes the step into `out` (at least max_step_message_bytes() bytes); returns the size used.
size_t encode_step(const ForwardContext& context, std::span<const int32_t> logit_rows,
                   std::span<std::byte> out);
// The message that ends a worker's step loop.
std::span<const std::byte> shutdown_message();

struct ReceivedStep {
    MessageKind kind = MessageKind::Shutdown;
    ForwardContext context;               // arrays point into the message
    std::span<const int32_t> logit_rows;  // into the message
};
ReceivedStep decode_step(std::span<const std::byte> message);

}  // namespace lmrun::parallel
