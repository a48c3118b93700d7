// Rotary position embedding, HF rotate_half (NeoX) layout: for each head, with h = head_dim / 2,
//   out[i]     = x[i] · cos_i − x[i + h] · sin_i,   out[i + h] = x[i + h] · cos_i + x[i] · sin_i,
// with angle_i = position · theta^(−2i / head_dim).
// cos_sin: [max_position, head_dim] F32, cos in [0, h) and sin in [h, head_dim).
#pragma once

#include <cstdint>

namespace lmrun::kernels {

// Angles, cos and sin in double, then rounded to F32.
void build_rope_cache(double theta, int64_t head_dim, int64_t max_position, float* cos_sin);

// In place. x: [num_tokens, num_heads, head_dim] with `token_stride` floats between tokens (q and
// k can be rotated inside a packed qkv buffer). positions: [num_tokens] int32, each in
// [0, max_position) of the cache.
void apply_rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim, int64_t token_stride,
                const int32_t* positions, const float* cos_sin);
// The same for one token's num_heads contiguous heads at `position`, on the calling thread.
void apply_rope_token(float* x, int64_t num_heads, int64_t head_dim, int32_t position, const float* cos_sin);

}  // namespace lmrun::kernels
