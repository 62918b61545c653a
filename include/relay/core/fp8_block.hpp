// fp8 blocks: how a run of elements travels as fp8 (docs/schedules.md, "fp8 on the wire").
//
// A block is 32 elements as fp8 codes (fp8.hpp) plus one byte: the exponent k of a power-of-two
// scale, so element x travels as fp8(x * 2^-k) and arrives as fp8_value * 2^k. Why these choices:
// - A power of two scales exactly, so the only rounding is fp8's own; fp8 is floating point, so
//   its relative precision (3 fraction bits: half an ulp is 2^-4 of the value) does not depend on
//   the scale, which only has to keep the block's largest magnitude M below fp8's largest value
//   (k = ceil(log2(M / fp8_max))) and small elements out of fp8's subnormals as far as it can.
// - 32 elements per scale byte: 33 bytes per 32 elements (1.03 bytes an element, 1.94x fewer
//   than bf16), the block of the OCP MX formats, and one warp's (or half a wavefront's) worth of
//   elements, so a block's maximum is one shuffle reduction on the GPU. A larger block saves
//   little (1.5% at 64) and lets one outlier push more neighbours into the subnormals.
//
// Error bound, per finite element x of a block whose largest finite magnitude is M:
//   |arrived - x| <= 2^-4 * |x| + max(2^s * M / fp8_max, 2^(s - 128)),
//   s = -9 (e4m3: subnormal step 2^-9, fp8_max 448), -10 (fnuz: 2^-10, 240)
// (the first term: fp8's rounding of normal values; the second: half a subnormal step at the
// block's scale, since 2^k < 2 M / fp8_max, or at 2^-127 where k stops (fp8_block_exponent):
// a block whose M is below about 2^-119, float32 or bfloat16 subnormals and their smallest
// normals, keeps that scale, so its elements below 2^(s - 128) arrive as zero). A reduction of
// A inputs that dequantizes and sums in fp32 adds these over its inputs, plus fp32's own
// rounding of the sum.
//
// Non-finite elements: M and k come from the finite elements only, so one NaN or infinity does
// not change its 31 neighbours. A NaN travels as fp8's NaN code and arrives as NaN. e4m3 has no
// infinity: an infinity travels as the NaN code too and arrives as NaN (the native result would
// be an infinity, or NaN where infinities of both signs meet); it never saturates into a finite
// value. A block with no finite nonzero element has k = 0.
#pragma once

#include <cstdint>
#include <type_traits>

#include "relay/core/config.hpp"
#include "relay/core/fp8.hpp"

namespace relay {

inline constexpr int fp8_block_elements = 32;
// Wire bytes of `count` elements as fp8 blocks: a code each and a scale byte per started block.
RELAY_HOST_DEVICE constexpr std::uint64_t fp8_wire_bytes(std::uint64_t count) {
  return count + (count + fp8_block_elements - 1) / fp8_block_elements;
}

namespace detail {

// 2^e as a float, exactly, for e in [-149, 127].
RELAY_HOST_DEVICE constexpr float exact_pow2(int e) {
  return e >= -126 ? bits_float(static_cast<std::uint32_t>(e + 127) << 23)
                   : bits_float(1u << (e + 149));
}

}  // namespace detail

// The scale exponent of a block whose largest finite magnitude is `amax`: the smallest k in
// [-127, 127] with amax * 2^-k <= fp8_max(f).
RELAY_HOST_DEVICE constexpr int fp8_block_exponent(fp8_format f, float amax) {
  if (!(amax > 0)) return 0;
  const int amax_exp = static_cast<int>(float_bits(amax) >> 23) - 127;  // floor(log2) if normal
  const int max_exp = f == fp8_format::e4m3 ? 8 : 7;                    // 448 = 1.75 * 2^8, ...
  int k = amax_exp - max_exp;
  // The scale byte's floor (-128 would need 2^128 to scale by): blocks of float subnormals stay
  // in range, but fp8's subnormal step is then 2^(s - 127), not relative to amax (the bound's
  // 2^(s - 128) term above).
  if (k < -127) k = -127;
  if (amax * detail::exact_pow2(-k) > fp8_max(f)) ++k;
  return k;
}

// Quantizes n <= fp8_block_elements elements into `codes`; returns the block's scale exponent.
RELAY_HOST_DEVICE constexpr std::int8_t fp8_quantize_block(fp8_format f, const float* x, int n,
                                                           std::uint8_t* codes) {
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float a = x[i] < 0 ? -x[i] : x[i];
    if (a <= 3.4028234663852886e38f && a > amax) amax = a;  // finite only (NaN fails both)
  }
  const int k = fp8_block_exponent(f, amax);
  const float down = detail::exact_pow2(-k);
  for (int i = 0; i < n; ++i) {
    const float a = x[i] < 0 ? -x[i] : x[i];
    const bool finite = a <= 3.4028234663852886e38f;
    codes[i] = finite ? fp8_from_float(f, x[i] * down) : detail::fp8_nan_code(f);
  }
  return static_cast<std::int8_t>(k);
}

// The element a code of a block with scale exponent k stands for.
RELAY_HOST_DEVICE constexpr float fp8_dequantize(fp8_format f, std::uint8_t code, int k) {
  return fp8_to_float(f, code) * detail::exact_pow2(k);
}

// fp8_to_float without its loop (what the kernels and the host executor's table use): the
// significand, an integer below 16, times an exact power of two.
RELAY_HOST_DEVICE constexpr float fp8_value(fp8_format f, std::uint8_t code) {
  if (fp8_is_nan(f, code)) return bits_float(0x7fc00000u);
  const int bias = f == fp8_format::e4m3 ? 7 : 8;
  const int exp = (code >> 3) & 0xf, mant = code & 7;
  const float v = static_cast<float>(exp == 0 ? mant : 8 + mant) *
                  detail::exact_pow2((exp == 0 ? 1 : exp) - bias - 3);
  return (code & 0x80u) ? -v : v;
}

// What an arrived value `v` (a dequantized code; `finite`: the code was not NaN) stores as in T
// (float, float16 or bfloat16): rounded to nearest even, and a finite value stays finite,
// saturating to T's largest like fp8's own conversion: a value that rounded up into fp8's next
// binade can lie just beyond T's range (fp16's 65504 arrives as 65536, a float near FLT_MAX as
// 2^128). Shared by the host executor and the GPU kernels, so both store the same bits.
template <class T>
RELAY_HOST_DEVICE constexpr T fp8_store(float v, bool finite) {
  if constexpr (std::is_same_v<T, float>) {
    if (finite && !(v - v == 0.0f)) return bits_float((float_bits(v) & 0x80000000u) | 0x7f7fffffu);
    return v;
  } else {
    T t = T::from_float(v);
    const std::uint16_t exponent = std::is_same_v<T, float16> ? 0x7c00 : 0x7f80;
    if (finite && (t.bits & exponent) == exponent)  // rounded to an infinity: the largest finite
      t = T::from_bits(static_cast<std::uint16_t>((t.bits & 0x8000u) | (exponent - 1u)));
    return t;
  }
}

// ---- The kernels' forms -------------------------------------------------------------------------
//
// The same results as the reference functions above, for one encoding known at compile time and
// with no loop or data-dependent branch: what the GPU kernels run per element (gpu/fp8_kernels.hpp)
// where the hardware has no conversion of its own (AMD, and e4m3_fnuz on NVIDIA). Host-testable:
// tests/unit/core/test_fp8_block.cpp checks them against the reference over every code, every
// 16-bit value and every rounding boundary of the floats they take.
namespace detail {

// fp8_block_exponent for a finite amax >= 0. k = e - max_exp, plus one when amax's fraction field
// exceeds fp8_max's (1.75 = fraction 0x600000 for e4m3, 1.875 = 0x700000 for fnuz): adding
// 0x7fffff minus that fraction carries into the exponent field exactly then.
template <fp8_format F>
RELAY_HOST_DEVICE constexpr int fp8_block_exponent_bits(float amax) {
  constexpr std::uint32_t carry = F == fp8_format::e4m3 ? 0x1fffffu : 0x0fffffu;
  constexpr int offset = 127 + (F == fp8_format::e4m3 ? 8 : 7);
  const std::uint32_t a = float_bits(amax);
  const int k = static_cast<int>((a + carry) >> 23) - offset;
  return a == 0 ? 0 : k < -127 ? -127 : k;
}

// fp8_from_float(F, y) for a finite y with |y| <= fp8_max(F), which every scaled element of a
// block is (its scale keeps the block's largest finite magnitude there): no NaN, no saturation.
template <fp8_format F>
RELAY_HOST_DEVICE constexpr std::uint32_t fp8_encode_in_range(float y) {
  constexpr std::uint32_t bias = F == fp8_format::e4m3 ? 7 : 8;
  const std::uint32_t bits = float_bits(y), abs = bits & 0x7fffffffu;
  // A subnormal result (|y| < 2^(1 - bias)): 2^(21 - bias) has fp8's subnormal step 2^(-2 - bias)
  // as its ulp, so the float sum rounds |y| to a multiple of the step, to nearest even, in one
  // rounding; the sum's low bits count the steps (8 of them: the smallest normal code). A float
  // subnormal y (flushed or not) gives 0 either way.
  constexpr float magic = bits_float((127u + 21u - bias) << 23);
  const std::uint32_t subnormal = float_bits(bits_float(abs) + magic) - float_bits(magic);
  // A normal result: round away the 20 low fraction bits to nearest even (a carry moves into the
  // next binade, as it should) and rebias the exponent. Wraps harmlessly where not selected.
  const std::uint32_t normal = ((abs + 0x7ffffu + ((abs >> 20) & 1u)) >> 20) - ((127u - bias) << 3);
  const std::uint32_t code = abs < ((128u - bias) << 23) ? subnormal : normal;
  const std::uint32_t sign = (bits >> 24) & 0x80u;
  if constexpr (F == fp8_format::e4m3_fnuz)
    return code == 0 ? 0u : sign | code;  // one zero: 0x80 is the NaN
  else
    return sign | code;
}

// fp8_value(F, code) (code < 256): the code's exponent and fraction fields put in a float's low
// exponent and high fraction bits make 2^(bias - 127) times the value (a float subnormal where the
// code is one), scaled back by one exact multiply. Needs a multiply that keeps float subnormals
// (no flush to zero), as the executors' bit-exactness does anyway. NaN: the reference's bits.
template <fp8_format F>
RELAY_HOST_DEVICE constexpr float fp8_decode(std::uint32_t code) {
  constexpr std::uint32_t bias = F == fp8_format::e4m3 ? 7 : 8;
  const float v =
      bits_float(((code & 0x80u) << 24) | ((code & 0x7fu) << 20)) * bits_float((254u - bias) << 23);
  const bool nan = F == fp8_format::e4m3 ? (code & 0x7fu) == 0x7fu : code == 0x80u;
  return nan ? bits_float(0x7fc00000u) : v;
}

// float16::to_float without its normalizing loop: the same multiply for subnormals, and the
// exponent field 31 (infinity, NaN with its payload) carried over.
RELAY_HOST_DEVICE constexpr float float16_widen(std::uint32_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, rest = (h & 0x7fffu) << 13;
  const float finite = bits_float(sign | rest) * bits_float(0x77800000u);  // 2^112
  return (h & 0x7c00u) == 0x7c00u ? bits_float(sign | 0x7f800000u | rest) : finite;
}

// The largest block exponent at which every code of encoding F arrives within T's finite range:
// fp8_max * 2^k <= T's largest finite value (fp8_max's fraction, 1.75 or 1.875, is below T's
// largest, so the exponents decide). Up to it fp8_store<T> is T's plain rounding; above it (only
// blocks whose largest element was within a factor 2^8 of T's largest) it may saturate.
template <class T, fp8_format F>
inline constexpr int fp8_store_plain_k = (std::is_same_v<T, float16> ? 15 : 127) -
                                         (F == fp8_format::e4m3 ? 8 : 7);

}  // namespace detail

}  // namespace relay
