// fp8 blocks: how a run of elements travels as fp8 (docs/schedules.md, "fp8 on the wire").
//
// A block is 128 consecutive elements as fp8 codes (fp8.hpp) plus one fp32 scale s. With M the
// block's largest finite magnitude and 2^e the largest power of two not above the format's
// largest value (fp8_target_exponent: e4m3, largest 448, e = 8; e4m3_fnuz, largest 240, e = 7):
//
//   s = max(M * 2^-e, 2^-126)     (0 for a block with no finite nonzero element)
//   code = fp8(x / s)             (the quotient a correctly rounded float division, then fp8's
//                                  rounding to nearest even)
//   arrived = fp8_value(code) * s (one float rounding)
//
// Why these choices:
// - The target 2^e is a power of two, so M * 2^-e is exact and M travels as exactly 2^e, which
//   fp8 holds: M arrives exactly. A block of equal elements therefore arrives bit for bit, and
//   so does a sum of such blocks (in fp32, rounded once), which is what callers that fill their
//   buffers with constants compare exactly. RCCLX's low-precision wire normalizes to 128 for
//   both encodings; relay's e4m3 target, 256, is one binade higher: e4m3's normal codes reach
//   down to 2^-6, so a block's elements down to M * 2^-14 (RCCLX: M * 2^-13) keep fp8's full
//   4 significant bits before its subnormals.
// - The floor 2^-126 keeps s a normal float, so that M * 2^-e is exact wherever it applies and
//   |x / s| never exceeds 2^e (below M = 2^(e - 126) the scale stays 2^-126, |x / s| < 2^e): the
//   conversion never saturates and sees no NaN or infinity except where x is one.
// - 128 elements per 4-byte scale: 33 bytes per 32 elements (1.03 bytes an element,
//   1.94x fewer than bf16), RCCLX's block, and one warp (or half a wavefront) of 16-byte
//   accesses for float: a block's maximum is one shuffle reduction on the GPU.
//
// The image of `count` elements (fp8_wire_bytes): the count codes first, so that the GPU's
// 16-byte accesses of codes stay aligned with those of the elements, then zero bytes up to a
// multiple of 4 (fp8_scales_at), then one 4-byte scale (a float's bytes, in the machine's byte
// order) per started block.
//
// Error bound, per finite element x of a block whose largest finite magnitude is M, with
// G = max(M, 2^(e - 126)) (so s = G * 2^-e):
//   |arrived - x| <= (2^-4 + 2^-22) |x| + (2^-18 + 2^-30) G
// The first term: fp8's rounding of a normal value (half an ulp is at most 2^-4 of it), plus the
// division's and the product's float roundings (2^-24 each, relative). The second: half of fp8's
// subnormal step (2^-10 for e4m3, 2^-11 for fnuz) at the scale, 2^-18 G for both encodings, and
// float subnormal quotients and products folded in. A block whose M is below 2^(e - 126)
// (2^-118, 2^-119: float32 and bfloat16 subnormals and their smallest normals) keeps the scale
// 2^-126, where that step is absolute: its elements up to 2^(e - 144) (2^-136, 2^-137) arrive as
// zero, and it round-trips exactly only where its elements have at most 4 significant bits.
// Storing the arrival in a 16-bit type rounds it once more (fp8_store). A reduction of A inputs
// that dequantizes and sums in fp32 adds these over its inputs, plus fp32's own rounding of the
// sum.
//
// Non-finite elements: M and s come from the finite elements only, so one NaN or infinity does
// not change its 127 neighbours. A NaN travels as fp8's NaN code and arrives as NaN. e4m3 has no
// infinity: an infinity travels as the NaN code too and arrives as NaN (the native result would
// be an infinity, or NaN where infinities of both signs meet); it never saturates into a finite
// value. A block with no finite nonzero element has the scale 0: its zeros travel as zero codes
// of their sign (e4m3_fnuz has one zero, so -0 arrives as +0 there) and arrive as zeros.
#pragma once

#include <cstdint>
#include <type_traits>

#include "relay/core/config.hpp"
#include "relay/core/fp8.hpp"

namespace relay {

inline constexpr int fp8_block_elements = 128;
inline constexpr int fp8_scale_bytes = 4;  // a float

// The blocks `count` elements start.
RELAY_HOST_DEVICE constexpr std::uint64_t fp8_blocks(std::uint64_t count) {
  return (count + fp8_block_elements - 1) / fp8_block_elements;
}
// Where an image's scales start: after its codes, at the next multiple of 4.
RELAY_HOST_DEVICE constexpr std::uint64_t fp8_scales_at(std::uint64_t count) {
  return (count + fp8_scale_bytes - 1) / fp8_scale_bytes * fp8_scale_bytes;
}
// Wire bytes of `count` elements as fp8 blocks: the codes, their padding, a scale per block.
RELAY_HOST_DEVICE constexpr std::uint64_t fp8_wire_bytes(std::uint64_t count) {
  return fp8_scales_at(count) + fp8_scale_bytes * fp8_blocks(count);
}

// e: the block's largest finite magnitude travels as 2^e, the largest power of two within the
// format's range (256 <= 448 for e4m3, 128 <= 240 for e4m3_fnuz).
RELAY_HOST_DEVICE constexpr int fp8_target_exponent(fp8_format f) {
  return f == fp8_format::e4m3 ? 8 : 7;
}

namespace detail {

// 2^e as a float, exactly, for e in [-149, 127].
RELAY_HOST_DEVICE constexpr float exact_pow2(int e) {
  return e >= -126 ? bits_float(static_cast<std::uint32_t>(e + 127) << 23)
                   : bits_float(1u << (e + 149));
}

inline constexpr float fp8_largest_float = 3.4028234663852886e38f;

}  // namespace detail

// The scale of a block whose largest finite magnitude is `amax` (finite, >= 0): amax * 2^-e,
// exact, or 2^-126 where that would be smaller; 0 where amax is 0. No loop and no branch: the
// kernels compute it as it is.
RELAY_HOST_DEVICE constexpr float fp8_block_scale(fp8_format f, float amax) {
  const float scaled = amax * detail::exact_pow2(-fp8_target_exponent(f));
  const float floor = detail::exact_pow2(-126);
  const float s = scaled < floor ? floor : scaled;
  return amax > 0 ? s : 0.0f;
}

// What a block's elements are divided by: its scale, or 1 for a block of scale 0 (its finite
// elements are zeros, which then keep their sign; 0 / 0 would be NaN).
RELAY_HOST_DEVICE constexpr float fp8_divisor(float scale) {
  return scale > 0 ? scale : 1.0f;
}

// Quantizes n <= fp8_block_elements elements into `codes`; returns the block's scale.
RELAY_HOST_DEVICE constexpr float fp8_quantize_block(fp8_format f, const float* x, int n,
                                                     std::uint8_t* codes) {
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float a = x[i] < 0 ? -x[i] : x[i];
    if (a <= detail::fp8_largest_float && a > amax) amax = a;  // finite only (NaN fails both)
  }
  const float s = fp8_block_scale(f, amax);
  const float divisor = fp8_divisor(s);
  for (int i = 0; i < n; ++i) {
    const float a = x[i] < 0 ? -x[i] : x[i];
    const bool finite = a <= detail::fp8_largest_float;
    codes[i] = finite ? fp8_from_float(f, x[i] / divisor) : detail::fp8_nan_code(f);
  }
  return s;
}

// The element a code of a block with scale `scale` stands for: one float rounding.
RELAY_HOST_DEVICE constexpr float fp8_dequantize(fp8_format f, std::uint8_t code, float scale) {
  return fp8_to_float(f, code) * scale;
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
// saturating to T's largest like fp8's own conversion. An image the quantizer made never needs
// that (an arrival is at most its block's M, which T holds), but any image's codes and scales
// store as finite values: a code up to fp8_max times a scale above T's largest / fp8_max lies
// beyond T's range (fp16's 448 * 2^8 arrives as 65504, a float product beyond FLT_MAX as its
// largest). Shared by the host executor and the GPU kernels, so both store the same bits.
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

// fp8_from_float(F, y) for a finite y with |y| <= fp8_max(F), which every quotient of a block
// is (|x / s| <= 2^e): no NaN, no saturation.
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

// The largest scale at which every code of encoding F arrives within T's finite range:
// fp8_max * s <= T's largest finite value for s up to 2^k with this k (fp8_max's fraction, 1.75
// or 1.875, is below T's largest, so the exponents decide; the rounded product is at most the
// exact bound, which is a float). Up to it fp8_store<T> is T's plain rounding; above it (only
// blocks whose largest element was within a factor 2^7 or 2^8 of T's largest) it may saturate.
template <class T, fp8_format F>
inline constexpr float fp8_store_plain_scale = exact_pow2((std::is_same_v<T, float16> ? 15 : 127) -
                                                          (F == fp8_format::e4m3 ? 8 : 7));

}  // namespace detail

}  // namespace relay
