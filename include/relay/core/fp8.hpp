// 8-bit floating point for the wire: the two e4m3 encodings relay's targets use.
//
//   e4m3       OCP 8-bit floating point (NVIDIA Hopper/Blackwell, AMD gfx950): bias 7, signed
//              zeros, no infinities, NaN = S.1111.111, largest finite 448 (S.1111.110).
//   e4m3_fnuz  AMD gfx942 (MI300X): bias 8, one zero (0x00), no infinities, NaN = 0x80 (the
//              "negative zero" code), largest finite 240 (S.1111.111).
//
// Both have 3 mantissa bits and subnormals (exponent field 0: m/8 * 2^(1 - bias)). Conversion
// from float rounds to nearest, ties to even, and saturates: a finite value beyond the largest
// finite one, and an infinity, become the largest finite value of its sign (what CUDA's
// __NV_SATFINITE and the AMD saturating conversions do). NaN becomes the NaN code. Written out
// bit by bit, like half.hpp, so that the host reference and the GPU kernels agree to the bit.
#pragma once

#include <cstdint>

#include "relay/core/config.hpp"
#include "relay/core/half.hpp"

namespace relay {

enum class fp8_format : unsigned char { e4m3, e4m3_fnuz };

namespace detail {

RELAY_HOST_DEVICE constexpr int fp8_bias(fp8_format f) {
  return f == fp8_format::e4m3 ? 7 : 8;
}
// The largest finite magnitude's code (sign bit clear).
RELAY_HOST_DEVICE constexpr std::uint8_t fp8_max_code(fp8_format f) {
  return f == fp8_format::e4m3 ? 0x7e : 0x7f;
}
RELAY_HOST_DEVICE constexpr std::uint8_t fp8_nan_code(fp8_format f) {
  return f == fp8_format::e4m3 ? 0x7f : 0x80;
}

}  // namespace detail

// The largest finite value of a format: 448 (e4m3) or 240 (e4m3_fnuz).
RELAY_HOST_DEVICE constexpr float fp8_max(fp8_format f) {
  return f == fp8_format::e4m3 ? 448.0f : 240.0f;
}

RELAY_HOST_DEVICE constexpr bool fp8_is_nan(fp8_format f, std::uint8_t code) {
  return f == fp8_format::e4m3 ? (code & 0x7fu) == 0x7fu : code == 0x80u;
}

// float -> fp8 code: round to nearest even, saturating (see above).
RELAY_HOST_DEVICE constexpr std::uint8_t fp8_from_float(fp8_format f, float x) {
  const std::uint32_t bits = float_bits(x);
  const std::uint32_t abs = bits & 0x7fffffffu;
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  if (abs > 0x7f800000u) return detail::fp8_nan_code(f);
  const int bias = detail::fp8_bias(f);
  const std::uint8_t max_code = detail::fp8_max_code(f);
  std::uint32_t code = 0;
  const int e = static_cast<int>(abs >> 23) - 127;  // unbiased exponent of a normal float
  if (abs >= 0x7f800000u || e > 15 - bias) {
    code = max_code;                // infinity, or at least 2^(16 - bias): beyond every finite code
  } else if (abs >= 0x00800000u) {  // a normal float (float subnormals are far below fp8's)
    // The value is M * 2^(e - 23) with the 24-bit significand M. fp8 keeps 3 fraction bits at
    // exponent max(e, 1 - bias): q = M / 2^shift quanta of 2^(max(e, 1 - bias) - 3).
    const int scale = e > 1 - bias ? e : 1 - bias;
    const int shift = scale - e + 20;  // >= 20
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    if (shift <= 24) {  // else below half the smallest subnormal: zero
      std::uint32_t q = m >> shift;
      const std::uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
      if (rest > half || (rest == half && (q & 1u))) ++q;  // a carry moves to the next binade
      // Normal: exponent field scale + bias, q in [8, 16]; subnormal (scale = 1 - bias): q in
      // [0, 8], where q = 8 is the smallest normal. Both are (scale + bias - 1) * 8 + q.
      code = static_cast<std::uint32_t>(scale + bias - 1) * 8u + q;
    }
    if (code > max_code) code = max_code;
  }
  if (f == fp8_format::e4m3_fnuz && code == 0) return 0;  // one zero: 0x80 is NaN
  return static_cast<std::uint8_t>(sign | code);
}

// fp8 code -> float (exact: every fp8 value is a float).
RELAY_HOST_DEVICE constexpr float fp8_to_float(fp8_format f, std::uint8_t code) {
  if (fp8_is_nan(f, code)) return bits_float(0x7fc00000u);
  const int bias = detail::fp8_bias(f);
  const int exp = (code >> 3) & 0xf, mant = code & 7;
  // value = significand * 2^power, with the significand an integer below 16.
  const int significand = exp == 0 ? mant : 8 + mant;
  const int power = (exp == 0 ? 1 : exp) - bias - 3;
  float v = static_cast<float>(significand);
  for (int i = 0; i < power; ++i)
    v *= 2.0f;
  for (int i = 0; i > power; --i)
    v *= 0.5f;
  return (code & 0x80u) ? -v : v;
}

}  // namespace relay
