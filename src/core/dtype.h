// Element types of tensors and checkpoints, and the scalar conversions between them.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace lmrun {

// I8: int8 weights (quantized checkpoints, the int8 linear layout) and int8 KV caches; U8 for
// completeness of safetensors; F8E4M3: the OCP fp8 "e4m3fn" format (no infinities, max 448).
enum class DType : uint8_t { F32, BF16, F16, I32, I64, I8, U8, F8E4M3 };

size_t dtype_size_bytes(DType dtype);
std::string_view dtype_name(DType dtype);
// Parses safetensors names ("F32", "BF16", ...) and torch names ("float32", "bfloat16", ...).
std::optional<DType> parse_dtype(std::string_view name);

inline float bf16_to_f32(uint16_t bits) {
    uint32_t widened = uint32_t(bits) << 16;
    float value;
    std::memcpy(&value, &widened, sizeof(value));
    return value;
}

// Round to nearest even, as PyTorch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return uint16_t(bits >> 16);
}

float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);

// fp8 e4m3fn (1 sign, 4 exponent bits with bias 7, 3 mantissa bits; 0x7f/0xff are NaN, no
// infinity). Rounds to nearest even and saturates at ±448, as PyTorch's cast with clamping.
float fp8_e4m3_to_f32(uint8_t bits);
uint8_t f32_to_fp8_e4m3(float value);
inline constexpr float kFp8E4M3Max = 448.0f;

// Converts `count` elements of `src` (any float dtype) to F32.
void convert_to_f32(const void* src, DType src_dtype, float* dst, size_t count);
// Converts `count` F32 values to `dst_dtype` (F32, BF16 or F16).
void convert_from_f32(const float* src, void* dst, DType dst_dtype, size_t count);
// Whether any of `count` values of a float dtype is NaN or Inf (all exponent bits set); `values`
// may be unaligned. Integer dtypes hold neither: false.
bool has_non_finite(const void* values, DType dtype, size_t count);

}  // namespace lmrun
