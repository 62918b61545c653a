// fp8 e4m3 (OCP) and e4m3_fnuz: hand-worked codes, every code's round trip, and random floats
// against a brute-force reference (the nearest of all 256 decoded values, ties to the even code).
#include "relay/core/fp8.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "support/fp8_formats.hpp"

using namespace relay;

namespace {

using relay::testing::e4m3, relay::testing::fnuz;

// Worked by hand from the bit layouts (fp8.hpp's header comment).
static_assert(fp8_from_float(e4m3, 1.0f) == 0x38);    // 0.0111.000: 2^(7-7)
static_assert(fp8_from_float(fnuz, 1.0f) == 0x40);    // 0.1000.000: 2^(8-8)
static_assert(fp8_from_float(e4m3, 448.0f) == 0x7e);  // 1.110 * 2^8
static_assert(fp8_from_float(fnuz, 240.0f) == 0x7f);  // 1.111 * 2^7
static_assert(fp8_to_float(e4m3, 0x01) == 0x1p-9f);   // smallest subnormals: 1/8 * 2^(1-7)
static_assert(fp8_to_float(fnuz, 0x01) == 0x1p-10f);
static_assert(fp8_to_float(e4m3, 0xb9) == -1.125f);

float nan() {
  return std::numeric_limits<float>::quiet_NaN();
}
float inf() {
  return std::numeric_limits<float>::infinity();
}

// The reference: every finite positive code decoded by its definition (significand * 2^power
// with std::ldexp, not fp8_to_float), the nearest one in double, ties to the even code,
// saturating beyond the largest; the sign applied afterwards.
std::uint8_t reference_encode(fp8_format f, float x) {
  if (std::isnan(x)) return f == e4m3 ? 0x7f : 0x80;
  const int bias = f == e4m3 ? 7 : 8;
  const int last = f == e4m3 ? 0x7e : 0x7f;
  const double a = std::fabs(static_cast<double>(x));
  int best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int c = 0; c <= last; ++c) {
    const int exp = c >> 3, mant = c & 7;
    const double v =
        exp == 0 ? std::ldexp(mant, 1 - bias - 3) : std::ldexp(8 + mant, exp - bias - 3);
    const double d = std::fabs(v - a);
    if (d < best_distance || (d == best_distance && c % 2 == 0)) {
      best = c;
      best_distance = d;
    }
  }
  // At or beyond the largest (infinities too): saturate. (Far beyond, the distances in double
  // would tie.)
  if (a >= (f == e4m3 ? 448.0 : 240.0)) best = last;
  if (best == 0 && f == fnuz) return 0;
  return static_cast<std::uint8_t>(best | (std::signbit(x) ? 0x80 : 0));
}

std::uint32_t bits_of(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, 4);
  return u;
}

}  // namespace

TEST_CASE("fp8: hand-worked conversions, rounding and saturation", "[core][fp8]") {
  // Ties to even: 1 + 1/16 lies halfway between 1 (0x38) and 1.125 (0x39); 1 + 3/16 between
  // 1.125 and 1.25 (0x3a).
  CHECK(fp8_from_float(e4m3, 1.0625f) == 0x38);
  CHECK(fp8_from_float(e4m3, 1.1875f) == 0x3a);
  CHECK(fp8_from_float(e4m3, 1.0626f) == 0x39);
  // Subnormals: half the smallest (2^-10) rounds to the even 0; three quarters to the smallest.
  CHECK(fp8_from_float(e4m3, 0x1p-10f) == 0x00);
  CHECK(fp8_from_float(e4m3, 0x1.8p-10f) == 0x01);
  CHECK(fp8_from_float(e4m3, 0x1.cp-7f) == 0x07);  // 7/8 * 2^-6: the largest subnormal
  CHECK(fp8_from_float(e4m3, 0x1.ep-7f) == 0x08);  // halfway to 2^-6: ties to even (0x08)
  // Saturation: beyond the largest finite value, and infinities, give the largest of the sign.
  CHECK(fp8_from_float(e4m3, 464.0f) == 0x7e);  // halfway 448..480: even is 0x7e
  CHECK(fp8_from_float(e4m3, 1e9f) == 0x7e);
  CHECK(fp8_from_float(e4m3, -inf()) == 0xfe);
  CHECK(fp8_from_float(fnuz, 1e9f) == 0x7f);
  CHECK(fp8_from_float(fnuz, -inf()) == 0xff);
  CHECK(fp8_from_float(fnuz, 248.0f) == 0x7f);
  // Zeros and NaN: e4m3 keeps -0; fnuz has one zero, and its 0x80 is NaN.
  CHECK(fp8_from_float(e4m3, -0.0f) == 0x80);
  CHECK(fp8_from_float(fnuz, -0.0f) == 0x00);
  CHECK(fp8_from_float(fnuz, -0x1p-30f) == 0x00);
  CHECK(fp8_from_float(e4m3, nan()) == 0x7f);
  CHECK(fp8_from_float(fnuz, -nan()) == 0x80);
  CHECK(std::isnan(fp8_to_float(e4m3, 0xff)));
  CHECK(std::isnan(fp8_to_float(fnuz, 0x80)));
  CHECK(fp8_to_float(fnuz, 0xff) == -240.0f);
  CHECK(fp8_max(e4m3) == fp8_to_float(e4m3, 0x7e));
  CHECK(fp8_max(fnuz) == fp8_to_float(fnuz, 0x7f));
}

TEST_CASE("fp8: every code survives decode then encode", "[core][fp8]") {
  for (fp8_format f : {e4m3, fnuz})
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      INFO("format " << static_cast<int>(f) << ", code " << c);
      const float v = fp8_to_float(f, code);
      if (fp8_is_nan(f, code)) {
        CHECK(std::isnan(v));
        CHECK(fp8_is_nan(f, fp8_from_float(f, v)));
      } else {
        CHECK(fp8_from_float(f, v) == code);
        CHECK(reference_encode(f, v) == code);
      }
    }
}

TEST_CASE("fp8: random floats encode as the brute-force nearest, ties to even",
          "[core][fp8][property]") {
  const std::uint64_t seed = 20261201;
  std::mt19937_64 rng(seed);
  std::vector<float> samples;
  // Every midpoint between neighbouring codes, and one float either side of it: the ties.
  for (fp8_format f : {e4m3, fnuz})
    for (int c = 0; c < 0x7f; ++c) {
      const float lo = fp8_to_float(f, static_cast<std::uint8_t>(c));
      const float hi = fp8_to_float(f, static_cast<std::uint8_t>(c + 1));
      if (std::isnan(hi)) continue;
      const float mid = (lo + hi) / 2;  // exact: both have few significant bits
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)})
        samples.insert(samples.end(), {x, -x});
    }
  // Random bit patterns over every binade, and random values in fp8's range.
  std::uniform_real_distribution<float> in_range(-500.0f, 500.0f);
  for (int i = 0; i < 100000; ++i) {
    const auto u = static_cast<std::uint32_t>(rng());
    float x = 0;
    std::memcpy(&x, &u, 4);
    samples.push_back(x);
    samples.push_back(in_range(rng));
    samples.push_back(std::ldexp(in_range(rng), -static_cast<int>(rng() % 24)));
  }
  for (fp8_format f : {e4m3, fnuz})
    for (float x : samples) {
      const std::uint8_t got = fp8_from_float(f, x), want = reference_encode(f, x);
      if (got != want) {
        FAIL("seed " << seed << ", format " << static_cast<int>(f) << ", x = " << x << " (bits 0x"
                     << std::hex << bits_of(x) << "): got 0x" << int{got} << ", want 0x"
                     << int{want});
      }
    }
}
