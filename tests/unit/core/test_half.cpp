// The 16-bit conversions against independent references: the compiler's own _Float16 (IEEE
// binary16, where the compiler has it) and bfloat16 values worked out by hand.
#include "relay/core/half.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include <catch2/catch.hpp>

using relay::bfloat16;
using relay::float16;

namespace {
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST_CASE("float16 conversion of hand-picked values", "[core][half]") {
  CHECK(float16::from_float(1.0f).bits == 0x3c00);
  CHECK(float16::from_float(-2.0f).bits == 0xc000);
  CHECK(float16::from_float(65504.0f).bits == 0x7bff);                // largest finite
  CHECK(float16::from_float(65520.0f).bits == 0x7c00);                // rounds to infinity
  CHECK(float16::from_float(1.0f + 1.0f / 2048).bits == 0x3c00);      // tie, to even
  CHECK(float16::from_float(1.0f + 3.0f / 2048).bits == 0x3c02);      // tie, to even (up)
  CHECK(float16::from_float(5.960464477539063e-08f).bits == 0x0001);  // smallest subnormal
  CHECK(float16::from_bits(0x0001).to_float() == 5.960464477539063e-08f);
  CHECK(float16::from_bits(0x3555).to_float() == 0.333251953125f);
  CHECK(std::isnan(float16::from_float(NAN).to_float()));
  CHECK(std::isinf(float16::from_bits(0xfc00).to_float()));
}

#if defined(__FLT16_MAX__)
TEST_CASE("float16 conversion matches the compiler's _Float16 on a sweep of floats",
          "[core][half]") {
  int mismatches = 0;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 65537) {
    const float f = from_bits(static_cast<std::uint32_t>(u));
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    std::uint16_t want;
    std::memcpy(&want, &h, 2);
    if (float16::from_float(f).bits != want) ++mismatches;
  }
  CHECK(mismatches == 0);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    const float want = static_cast<float>(h), got = float16::from_bits(bits).to_float();
    if (std::isnan(want) ? !std::isnan(got) : std::memcmp(&want, &got, 4) != 0) ++mismatches;
  }
  CHECK(mismatches == 0);
}
#endif

TEST_CASE("bfloat16 rounds to nearest even and widens exactly", "[core][half]") {
  CHECK(bfloat16::from_float(1.0f).bits == 0x3f80);
  CHECK(bfloat16::from_float(from_bits(0x3f808000u)).bits == 0x3f80);  // tie, even stays
  CHECK(bfloat16::from_float(from_bits(0x3f818000u)).bits == 0x3f82);  // tie, odd rounds up
  CHECK(bfloat16::from_float(from_bits(0x3f808001u)).bits == 0x3f81);  // above the tie
  CHECK(bfloat16::from_bits(0x4049).to_float() == 3.140625f);
  CHECK(std::isnan(bfloat16::from_float(NAN).to_float()));
}
