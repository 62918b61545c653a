// The fp8 wire per device (core/fp8_target.hpp): which encoding each architecture takes, and what
// that encoding makes of NaN, the largest finite values, subnormals and zeros on that device.
// Every expected code is worked out by hand from the bit layouts:
//   e4m3 (OCP; gfx950, NVIDIA)  S.EEEE.MMM, bias 7, NaN S.1111.111, largest 1.110 * 2^8 = 448
//   e4m3_fnuz (gfx942)          S.EEEE.MMM, bias 8, NaN 0x80 (only), largest 1.111 * 2^7 = 240
#include "relay/core/fp8_target.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <catch2/catch.hpp>

#include "support/fp8_formats.hpp"

using namespace relay;

namespace {

using relay::testing::e4m3, relay::testing::fnuz;

// The code `x` takes on the wire of a device of architecture `arch`.
std::uint8_t on(std::string_view arch, float x) {
  const std::optional<fp8_format> f = fp8_of_architecture(arch);
  REQUIRE(f.has_value());
  return fp8_from_float(*f, x);
}
float back(std::string_view arch, std::uint8_t code) {
  const std::optional<fp8_format> f = fp8_of_architecture(arch);
  REQUIRE(f.has_value());
  return fp8_to_float(*f, code);
}

constexpr std::string_view mi300x_arch = "gfx942:sramecc+:xnack-", mi350x_arch = "gfx950",
                           h200_arch = "sm_90";

}  // namespace

TEST_CASE("fp8 per device: each architecture's encoding", "[core][fp8]") {
  CHECK(fp8_of_architecture("gfx942") == fnuz);
  CHECK(fp8_of_architecture(mi300x_arch) == fnuz);  // features after ':' change nothing
  CHECK(fp8_of_architecture("gfx940") == fnuz);
  CHECK(fp8_of_architecture("gfx941:xnack+") == fnuz);
  CHECK(fp8_of_architecture(mi350x_arch) == e4m3);
  CHECK(fp8_of_architecture("gfx950:sramecc+:xnack-") == e4m3);
  CHECK(fp8_of_architecture(h200_arch) == e4m3);
  CHECK(fp8_of_architecture("sm_100") == e4m3);
  // No fp8 conversions: the machine's topology decides.
  CHECK_FALSE(fp8_of_architecture("gfx90a:sramecc+:xnack-").has_value());
  CHECK_FALSE(fp8_of_architecture("gfx1100").has_value());
  CHECK_FALSE(fp8_of_architecture("gfx9420").has_value());
  CHECK_FALSE(fp8_of_architecture("sm_").has_value());
  CHECK_FALSE(fp8_of_architecture("").has_value());
}

TEST_CASE("fp8 per device: NaN, the largest finite value, subnormals and zeros, by hand",
          "[core][fp8]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // 1.0: fnuz 0.1000.000 (2^(8-8)); OCP 0.0111.000 (2^(7-7)).
  CHECK(on(mi300x_arch, 1.0f) == 0x40);
  CHECK(on(mi350x_arch, 1.0f) == 0x38);
  CHECK(on(h200_arch, 1.0f) == 0x38);
  // NaN: fnuz's one NaN is 0x80 (its "negative zero"); OCP's S.1111.111, positive here.
  CHECK(on(mi300x_arch, nan) == 0x80);
  CHECK(on(mi300x_arch, -nan) == 0x80);
  CHECK(on(mi350x_arch, nan) == 0x7f);
  CHECK(on(h200_arch, nan) == 0x7f);
  CHECK(std::isnan(back(mi300x_arch, 0x80)));
  CHECK(std::isnan(back(mi350x_arch, 0x7f)));
  CHECK(std::isnan(back(mi350x_arch, 0xff)));
  CHECK(back(mi300x_arch, 0x7f) == 240.0f);  // on fnuz, S.1111.111 is a number, not NaN
  // The largest finite value, and saturation beyond it (an infinity too).
  CHECK(on(mi300x_arch, 240.0f) == 0x7f);
  CHECK(on(mi300x_arch, -240.0f) == 0xff);
  CHECK(on(mi300x_arch, 448.0f) == 0x7f);  // beyond fnuz's range: saturates
  CHECK(on(mi300x_arch, inf) == 0x7f);
  CHECK(on(mi350x_arch, 448.0f) == 0x7e);
  CHECK(on(mi350x_arch, -448.0f) == 0xfe);
  CHECK(on(mi350x_arch, inf) == 0x7e);
  CHECK(on(h200_arch, -inf) == 0xfe);
  CHECK(back(mi300x_arch, 0xff) == -240.0f);
  CHECK(back(mi350x_arch, 0x7e) == 448.0f);
  // Subnormals (exponent field 0: M/8 * 2^(1 - bias)): the smallest, 1/8 * 2^-7 = 2^-10 on fnuz
  // and 1/8 * 2^-6 = 2^-9 on OCP; the largest, 7/8 of 2^-7 and of 2^-6.
  CHECK(on(mi300x_arch, 0x1p-10f) == 0x01);
  CHECK(on(mi350x_arch, 0x1p-9f) == 0x01);
  CHECK(on(mi300x_arch, 0x1.cp-8f) == 0x07);
  CHECK(on(mi350x_arch, 0x1.cp-7f) == 0x07);
  CHECK(back(mi300x_arch, 0x01) == 0x1p-10f);
  CHECK(back(mi350x_arch, 0x01) == 0x1p-9f);
  CHECK(back(h200_arch, 0x87) == -0x1.cp-7f);
  // 2^-9 is fnuz's subnormal 0x02 (2/8 * 2^-7) but OCP's smallest (0x01): the encodings differ.
  CHECK(on(mi300x_arch, 0x1p-9f) == 0x02);
  // Half the smallest subnormal rounds to the even zero.
  CHECK(on(mi300x_arch, 0x1p-11f) == 0x00);
  CHECK(on(mi350x_arch, 0x1p-10f) == 0x00);
  // Zeros: OCP keeps -0 (0x80); fnuz has one zero (0x80 is its NaN).
  CHECK(on(mi300x_arch, -0.0f) == 0x00);
  CHECK(on(mi300x_arch, -0x1p-12f) == 0x00);
  CHECK(on(mi350x_arch, -0.0f) == 0x80);
}
