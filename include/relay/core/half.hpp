// 16-bit floating-point storage types usable on the host and in GPU kernels alike.
//
// relay never computes in 16 bits: reductions widen to float, sum in a fixed order and round
// once, to nearest even, when they store. So only the two conversions are needed, and they are
// written out bit by bit so that the host executor and the GPU kernels round identically.
#pragma once

#include <cstdint>
#include <type_traits>

#include "relay/core/config.hpp"

namespace relay {

RELAY_HOST_DEVICE constexpr std::uint32_t float_bits(float f) {
  return __builtin_bit_cast(std::uint32_t, f);
}
RELAY_HOST_DEVICE constexpr float bits_float(std::uint32_t u) {
  return __builtin_bit_cast(float, u);
}

// What both types are: 16 bits, made from their bits, equal when the bits are.
template <class T>
struct bits16 {
  std::uint16_t bits = 0;

  RELAY_HOST_DEVICE static constexpr T from_bits(std::uint16_t b) {
    T h;
    h.bits = b;
    return h;
  }
  friend constexpr bool operator==(T a, T b) { return a.bits == b.bits; }
};

// IEEE 754 binary16.
struct float16 : bits16<float16> {
  RELAY_HOST_DEVICE static constexpr float16 from_float(float f) {
    const std::uint32_t x = float_bits(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf stays inf; NaN stays a quiet NaN
      return from_bits(static_cast<std::uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u)));
    if (abs >= 0x477ff000u)  // rounds to beyond the largest finite half (65504)
      return from_bits(static_cast<std::uint16_t>(sign | 0x7c00u));
    if (abs < 0x38800000u) {  // below the smallest normal half: a subnormal or zero
      const int shift = 126 - static_cast<int>(abs >> 23);  // >= 14
      if (shift > 24) return from_bits(static_cast<std::uint16_t>(sign));
      const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      const std::uint32_t q = mant >> (shift - 1 + 0);  // keeps one guard bit below the half ulp
      const std::uint32_t rest = mant & ((1u << (shift - 1)) - 1u);
      std::uint32_t r = q >> 1;
      const std::uint32_t guard = q & 1u;
      if (guard && (rest != 0 || (r & 1u))) ++r;
      return from_bits(static_cast<std::uint16_t>(sign | r));
    }
    // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
    const std::uint32_t m = abs - 0x38000000u;  // (exp - 112) << 23 | mantissa
    std::uint32_t r = m >> 13;
    const std::uint32_t dropped = m & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (r & 1u))) ++r;  // may carry into exponent
    return from_bits(static_cast<std::uint16_t>(sign | r));
  }
  RELAY_HOST_DEVICE constexpr float to_float() const {
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    const std::uint32_t exp = (bits >> 10) & 0x1fu;
    std::uint32_t mant = bits & 0x3ffu;
    if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return bits_float(sign);
    int e = 113;  // a subnormal: normalize
    while ((mant & 0x400u) == 0)
      mant <<= 1, --e;
    return bits_float(sign | (static_cast<std::uint32_t>(e) << 23) | ((mant & 0x3ffu) << 13));
  }
};

// bfloat16: the top half of a binary32.
struct bfloat16 : bits16<bfloat16> {
  RELAY_HOST_DEVICE static constexpr bfloat16 from_float(float f) {
    const std::uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)  // NaN: keep it quiet
      return from_bits(static_cast<std::uint16_t>((x >> 16) | 0x40u));
    const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // to nearest even
    return from_bits(static_cast<std::uint16_t>((x + rounding) >> 16));
  }
  RELAY_HOST_DEVICE constexpr float to_float() const {
    return bits_float(static_cast<std::uint32_t>(bits) << 16);
  }
};

// Kernels and executors copy them as raw 16-bit words.
static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);
static_assert(std::is_trivially_copyable_v<float16> && std::is_trivially_copyable_v<bfloat16>);

}  // namespace relay
