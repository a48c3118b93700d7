#include "core/dtype.h"

#include <cmath>

#include "core/check.h"

namespace lmrun {

size_t dtype_size_bytes(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return 4;
        case DType::BF16:
        case DType::F16:
            return 2;
        case DType::I32:
            return 4;
        case DType::I64:
            return 8;
        case DType::I8:
        case DType::U8:
        case DType::F8E4M3:
            return 1;
    }
    return 0;
}

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return "F32";
        case DType::BF16:
            return "BF16";
        case DType::F16:
            return "F16";
        case DType::I32:
            return "I32";
        case DType::I64:
            return "I64";
        case DType::I8:
            return "I8";
        case DType::U8:
            return "U8";
        case DType::F8E4M3:
            return "F8_E4M3";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    if (name == "F32" || name == "float32" || name == "float") return DType::F32;
    if (name == "BF16" || name == "bfloat16") return DType::BF16;
    if (name == "F16" || name == "float16" || name == "half") return DType::F16;
    if (name == "I32" || name == "int32") return DType::I32;
    if (name == "I64" || name == "int64") return DType::I64;
    if (name == "I8" || name == "int8") return DType::I8;
    if (name == "U8" || name == "uint8") return DType::U8;
    if (name == "F8_E4M3" || name == "float8_e4m3fn") return DType::F8E4M3;
    return std::nullopt;
}

float f16_to_f32(uint16_t bits) {
    uint32_t sign = uint32_t(bits & 0x8000) << 16;
    uint32_t exponent = (bits >> 10) & 0x1f;
    uint32_t mantissa = bits & 0x3ff;
    uint32_t out;
    if (exponent == 0) {
        if (mantissa == 0) {
            out = sign;
        } else {  // subnormal: renormalize
            exponent = 127 - 15 + 1;
            while (!(mantissa & 0x400)) {
                mantissa <<= 1;
                --exponent;
            }
            mantissa &= 0x3ff;
            out = sign | (exponent << 23) | (mantissa << 13);
        }
    } else if (exponent == 0x1f) {
        out = sign | 0x7f800000u | (mantissa << 13);
    } else {
        out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float value;
    std::memcpy(&value, &out, sizeof(value));
    return value;
}

uint16_t f32_to_f16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    uint32_t sign = (bits >> 16) & 0x8000;
    int32_t exponent = int32_t((bits >> 23) & 0xff) - 127 + 15;
    uint32_t mantissa = bits & 0x7fffff;
    if (((bits >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mantissa ? 0x200 : 0));
    if (exponent >= 0x1f) return uint16_t(sign | 0x7c00);
    if (exponent <= 0) {
        if (exponent < -10) return uint16_t(sign);
        mantissa |= 0x800000;
        uint32_t shift = uint32_t(14 - exponent);
        uint32_t half = mantissa >> shift;
        uint32_t remainder = mantissa & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (remainder > halfway || (remainder == halfway && (half & 1))) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = sign | (uint32_t(exponent) << 10) | (mantissa >> 13);
    uint32_t remainder = mantissa & 0x1fff;
    if (remainder > 0x1000 || (remainder == 0x1000 && (half & 1))) ++half;
    return uint16_t(half);
}

float fp8_e4m3_to_f32(uint8_t bits) {
    const float sign = (bits & 0x80) ? -1.0f : 1.0f;
    const int exponent = (bits >> 3) & 0xf;
    const int mantissa = bits & 0x7;
    if (exponent == 0xf && mantissa == 0x7) return NAN;
    if (exponent == 0) return sign * std::ldexp(float(mantissa), -9);  // subnormal: m/8 · 2^-6
    return sign * std::ldexp(float(8 + mantissa), exponent - 10);      // (1 + m/8) · 2^(e-7)
}

uint8_t f32_to_fp8_e4m3(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    const uint8_t sign = uint8_t((bits >> 24) & 0x80);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return 0x7f;          // NaN
    if (magnitude >= 0x43e00000u) return sign | 0x7e;  // ≥ 448 (and infinity): saturate
    if (magnitude < 0x3c800000u) {                     // below 2^-6: multiples of 2^-9 (subnormals)
        float steps = std::nearbyint(std::fabs(value) * 512.0f);  // exact scaling; ties to even
        return sign | uint8_t(steps);                             // 8 steps is the smallest normal, code 8
    }
    // Normal: keep 3 of the 23 mantissa bits, rounding to nearest even; a carry moves into the
    // exponent. Rebias the exponent from 127 to 7.
    const uint32_t rounded = magnitude + 0x7ffffu + ((magnitude >> 20) & 1u);
    const uint32_t code = (rounded >> 20) - ((127u - 7u) << 3);
    return sign | uint8_t(code > 0x7eu ? 0x7eu : code);
}

void convert_to_f32(const void* src, DType src_dtype, float* dst, size_t count) {
    switch (src_dtype) {
        case DType::F32:
            std::memcpy(dst, src, count * sizeof(float));
            return;
        case DType::BF16: {
            const auto* in = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(in[i]);
            return;
        }
        case DType::F16: {
            const auto* in = static_cast<const uint16_t*>(src);
            for (size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(in[i]);
            return;
        }
        case DType::F8E4M3: {
            const auto* in = static_cast<const uint8_t*>(src);
            for (size_t i = 0; i < count; ++i) dst[i] = fp8_e4m3_to_f32(in[i]);
            return;
        }
        case DType::I32:
        case DType::I64:
        case DType::I8:
        case DType::U8:
            break;
    }
    LMRUN_CHECK(false, "convert_to_f32: %s is not a float type", dtype_name(src_dtype).data());
}

void convert_from_f32(const float* src, void* dst, DType dst_dtype, size_t count) {
    switch (dst_dtype) {
        case DType::F32:
            std::memcpy(dst, src, count * sizeof(float));
            return;
        case DType::BF16: {
            auto* out = static_cast<uint16_t*>(dst);
            for (size_t i = 0; i < count; ++i) out[i] = f32_to_bf16(src[i]);
            return;
        }
        case DType::F16: {
            auto* out = static_cast<uint16_t*>(dst);
            for (size_t i = 0; i < count; ++i) out[i] = f32_to_f16(src[i]);
            return;
        }
        case DType::F8E4M3: {
            auto* out = static_cast<uint8_t*>(dst);
            for (size_t i = 0; i < count; ++i) out[i] = f32_to_fp8_e4m3(src[i]);
            return;
        }
        case DType::I32:
        case DType::I64:
        case DType::I8:
        case DType::U8:
            break;
    }
    LMRUN_CHECK(false, "convert_from_f32: %s is not a float type", dtype_name(dst_dtype).data());
}

namespace {

// A value is NaN or Inf when its magnitude bits (sign cleared) are at least the all-ones
// exponent. Loads go through memcpy (rows of a mapped checkpoint may sit at odd byte offsets)
// and the test is a max reduction, which vectorizes: a weight load scans every element.
template <typename Bits>
bool any_exponent_all_ones(const void* values, size_t count, Bits magnitude_mask, Bits exponent_mask) {
    const auto* bytes = static_cast<const unsigned char*>(values);
    Bits largest = 0;
    for (size_t i = 0; i < count; ++i) {
        Bits value;
        std::memcpy(&value, bytes + i * sizeof(Bits), sizeof(Bits));
        value &= magnitude_mask;
        largest = value > largest ? value : largest;
    }
    return largest >= exponent_mask;
}

}  // namespace

bool has_non_finite(const void* values, DType dtype, size_t count) {
    switch (dtype) {
        case DType::F32:
            return any_exponent_all_ones(values, count, uint32_t(0x7fffffff), uint32_t(0x7f800000));
        case DType::BF16:
            return any_exponent_all_ones(values, count, uint16_t(0x7fff), uint16_t(0x7f80));
        case DType::F16:
            return any_exponent_all_ones(values, count, uint16_t(0x7fff), uint16_t(0x7c00));
        case DType::I8:
        case DType::U8:
        case DType::I32:
        case DType::I64:
        case DType::F8E4M3:
            return false;
    }
    return false;
}

}  // namespace lmrun
