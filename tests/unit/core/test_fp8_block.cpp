// fp8 blocks: scale exponents worked by hand, wire bytes, non-finite elements kept to
// themselves, and the documented error bound on random and adversarial blocks.
#include "relay/core/fp8_block.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

using namespace relay;

namespace {

constexpr fp8_format e4m3 = fp8_format::e4m3, fnuz = fp8_format::e4m3_fnuz;

// 33 bytes per 32 elements; a started block pays its scale byte.
static_assert(fp8_wire_bytes(0) == 0);
static_assert(fp8_wire_bytes(1) == 2);
static_assert(fp8_wire_bytes(32) == 33);
static_assert(fp8_wire_bytes(33) == 35);
// The smallest k with amax * 2^-k <= 448 (e4m3) or 240 (fnuz).
static_assert(fp8_block_exponent(e4m3, 448.0f) == 0);
static_assert(fp8_block_exponent(e4m3, 449.0f) == 1);
static_assert(fp8_block_exponent(e4m3, 1.0f) == -8);  // 256 <= 448 < 512
static_assert(fp8_block_exponent(fnuz, 1.0f) == -7);  // 128 <= 240 < 256
static_assert(fp8_block_exponent(e4m3, 0.0f) == 0);
static_assert(fp8_block_exponent(e4m3, 0x1p-149f) == -127);  // the clamp

const float quiet_nan = std::numeric_limits<float>::quiet_NaN();
const float infinity = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("fp8 blocks: a hand-worked block", "[core][fp8]") {
  // amax 3: k = -7 (3 * 128 = 384 <= 448); every element below is exact in fp8 at that scale.
  const float x[4] = {3.0f, -0.5f, 0.0f, 0x1p-12f};
  std::uint8_t codes[4] = {0xaa, 0xaa, 0xaa, 0xaa};
  const int k = fp8_quantize_block(e4m3, x, 4, codes);
  CHECK(k == -7);
  CHECK(codes[0] == 0x7c);  // 384 = 1.5 * 2^8: exponent field 15, mantissa 100
  CHECK(codes[1] == 0xe8);  // -64 = -2^6: 1.1101.000
  CHECK(codes[2] == 0x00);
  CHECK(codes[3] == 0x10);  // 2^-12 * 2^7 = 2^-5: exponent field -5 + 7 = 2, mantissa 0
  for (int i = 0; i < 4; ++i)
    CHECK(fp8_dequantize(e4m3, codes[i], k) == x[i]);
}

TEST_CASE("fp8 blocks: a NaN or an infinity stays in its own element", "[core][fp8]") {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> value(0.0f, 100.0f);
  for (fp8_format f : {e4m3, fnuz}) {
    std::vector<float> x(32), clean(32);
    for (float& v : x)
      v = value(rng);
    clean = x;
    x[5] = quiet_nan;
    x[9] = infinity;
    x[20] = -infinity;
    clean[5] = clean[9] = clean[20] = 0.0f;  // no influence on the finite maximum
    std::vector<std::uint8_t> got(32), want(32);
    const int k = fp8_quantize_block(f, x.data(), 32, got.data());
    CHECK(k == fp8_quantize_block(f, clean.data(), 32, want.data()));
    for (int i = 0; i < 32; ++i) {
      INFO("format " << static_cast<int>(f) << ", element " << i);
      if (i == 5 || i == 9 || i == 20) {
        CHECK(std::isnan(fp8_dequantize(f, got[i], k)));
      } else {
        CHECK(got[i] == want[i]);
        CHECK(std::isfinite(fp8_dequantize(f, got[i], k)));
      }
    }
  }
}

TEST_CASE("fp8 blocks: the error bound holds on random and adversarial blocks",
          "[core][fp8][property]") {
  const std::uint64_t seed = 20261201;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  std::uniform_int_distribution<int> binade(-40, 40), length(1, fp8_block_elements);
  std::uniform_int_distribution<int> kind(0, 99);
  long checked = 0;
  for (int block = 0; block < 20000; ++block) {
    const int n = length(rng);
    const int centre = block % 4 == 3 ? -135 : binade(rng);  // some blocks of float subnormals
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) {
      const int c = kind(rng);
      if (c < 2)
        v = quiet_nan;
      else if (c < 4)
        v = (c == 2 ? infinity : -infinity);
      else if (c < 8)
        v = 0.0f;
      else if (c < 12)
        v = std::numeric_limits<float>::denorm_min() * static_cast<float>(c);
      else {  // wide range within the block: up to 2^24 between neighbours
        const double mag = std::ldexp(unit(rng), centre + static_cast<int>(rng() % 25) - 12);
        v = static_cast<float>(rng() % 2 ? mag : -mag);
      }
    }
    for (fp8_format f : {e4m3, fnuz}) {
      std::vector<std::uint8_t> codes(x.size());
      const int k = fp8_quantize_block(f, x.data(), n, codes.data());
      double M = 0;  // the largest finite magnitude, found here independently
      for (float v : x)
        if (std::isfinite(v)) M = std::max(M, std::fabs(static_cast<double>(v)));
      const double fmax = f == e4m3 ? 448.0 : 240.0, step = f == e4m3 ? 0x1p-9 : 0x1p-10;
      for (int i = 0; i < n; ++i) {
        const double got = fp8_dequantize(f, codes[static_cast<std::size_t>(i)], k);
        if (!std::isfinite(x[static_cast<std::size_t>(i)])) {
          REQUIRE(std::isnan(got));
          continue;
        }
        const double want = x[static_cast<std::size_t>(i)];
        // The documented bound; below 2^-119 (blocks of float subnormals) the scale clamps at
        // 2^-127 and half a subnormal step there, 2^(s - 128), bounds the absolute term.
        const double bound =
            0x1p-4 * std::fabs(want) + std::max(step * M / fmax, std::ldexp(step, -128));
        if (!(std::fabs(got - want) <= bound))
          FAIL("seed " << seed << ", block " << block << ", format " << static_cast<int>(f)
                       << ", element " << i << ": " << want << " arrived as " << got << ", bound "
                       << bound << " (M " << M << ", k " << k << ")");
        ++checked;
      }
    }
  }
  CHECK(checked > 500000);
}

TEST_CASE("fp8_value is fp8_to_float without the loop, code for code", "[core][fp8]") {
  for (fp8_format f : {fp8_format::e4m3, fp8_format::e4m3_fnuz})
    for (unsigned c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      INFO("code " << c);
      CHECK(float_bits(fp8_value(f, code)) == float_bits(fp8_to_float(f, code)));
    }
  // By hand: e4m3 0x01 is 2^-9 (the smallest subnormal), 0x7e 448; fnuz 0x01 2^-10, 0x7f 240.
  CHECK(fp8_value(fp8_format::e4m3, 0x01) == 0x1p-9f);
  CHECK(fp8_value(fp8_format::e4m3, 0xfe) == -448.0f);
  CHECK(fp8_value(fp8_format::e4m3_fnuz, 0x01) == 0x1p-10f);
  CHECK(fp8_value(fp8_format::e4m3_fnuz, 0x7f) == 240.0f);
}

TEST_CASE("fp8_store keeps a finite arrival finite", "[core][fp8]") {
  // fp16: 65536 (65504's fp8 rounding) saturates to 65504 (0x7bff); 1.5 is exact; NaN stays.
  CHECK(fp8_store<float16>(65536.0f, true).bits == 0x7bff);
  CHECK(fp8_store<float16>(-65536.0f, true).bits == 0xfbff);
  CHECK(fp8_store<float16>(1.5f, true).bits == 0x3e00);
  CHECK(std::isnan(fp8_store<float16>(std::numeric_limits<float>::quiet_NaN(), false).to_float()));
  // bf16 and float: 2^128 (an infinity in float) saturates to the largest finite value.
  const float huge = std::numeric_limits<float>::infinity();
  CHECK(fp8_store<bfloat16>(huge, true).bits == 0x7f7f);
  CHECK(fp8_store<bfloat16>(-huge, true).bits == 0xff7f);
  CHECK(fp8_store<float>(huge, true) == std::numeric_limits<float>::max());
  CHECK(fp8_store<float>(-huge, true) == -std::numeric_limits<float>::max());
  CHECK(std::isnan(fp8_store<float>(std::numeric_limits<float>::quiet_NaN(), false)));
  // Subnormal spacing: bf16 holds 2^-133 but not 2^-135, which rounds to zero (even).
  CHECK(fp8_store<bfloat16>(0x1p-133f, true).bits == 0x0001);
  CHECK(fp8_store<bfloat16>(0x1p-135f, true).bits == 0x0000);
}

// ---- the kernels' forms against the reference
// ----------------------------------------------------

namespace {

// Low-bit endings that decide a rounding's sticky part: none, the smallest, just below and at and
// just above half of the 11 bits, and all of them.
constexpr std::uint32_t low_bits[] = {0x000, 0x001, 0x3ff, 0x400, 0x401, 0x7ff};

template <fp8_format F>
void check_encode_in_range() {
  const float fmax = fp8_max(F);
  // Every float of magnitude up to fp8_max whose low 11 bits are one of low_bits: all the bits
  // above them (the rounding position is bit 20 for normal codes, higher for subnormal ones).
  long checked = 0;
  for (std::uint32_t high = 0; high <= (float_bits(fmax) >> 11); ++high)
    for (std::uint32_t low : low_bits)
      for (std::uint32_t sign : {0u, 0x80000000u}) {
        const float y = bits_float(sign | (high << 11) | low);
        if (!(std::fabs(y) <= fmax)) continue;
        const std::uint32_t got = detail::fp8_encode_in_range<F>(y);
        const std::uint32_t want = fp8_from_float(F, y);
        if (got != want)
          FAIL("format " << static_cast<int>(F) << ", float bits " << float_bits(y) << ": code "
                         << got << ", want " << want);
        ++checked;
      }
  CHECK(checked > 6000000);
  // By hand: the largest finite, a tie at the smallest subnormal (to zero, even), just above it.
  CHECK(detail::fp8_encode_in_range<F>(-fmax) == (F == e4m3 ? 0xfeu : 0xffu));
  const float half_step = F == e4m3 ? 0x1p-10f : 0x1p-11f;
  CHECK(detail::fp8_encode_in_range<F>(half_step) == 0u);
  CHECK(detail::fp8_encode_in_range<F>(-half_step) == (F == e4m3 ? 0x80u : 0x00u));
  CHECK(detail::fp8_encode_in_range<F>(std::nextafter(half_step, 1.0f)) == 1u);
}

}  // namespace

TEST_CASE("fp8 kernels' forms: the in-range encoding is fp8_from_float", "[core][fp8]") {
  check_encode_in_range<e4m3>();
  check_encode_in_range<fnuz>();
}

TEST_CASE("fp8 kernels' forms: the block exponent from amax's bits", "[core][fp8]") {
  // Every binade, with fractions at and around the ones of 448 (0x600000) and 240 (0x700000).
  const std::uint32_t fractions[] = {0,        1,        0x5fffff, 0x600000, 0x600001,
                                     0x6fffff, 0x700000, 0x700001, 0x7fffff};
  for (std::uint32_t e = 0; e < 255; ++e)
    for (std::uint32_t m : fractions) {
      const float amax = bits_float(e << 23 | m);
      INFO("amax bits " << float_bits(amax));
      CHECK(detail::fp8_block_exponent_bits<e4m3>(amax) == fp8_block_exponent(e4m3, amax));
      CHECK(detail::fp8_block_exponent_bits<fnuz>(amax) == fp8_block_exponent(fnuz, amax));
    }
  // By hand: 448 and 240 need no scale, one more ulp does; FLT_MAX takes the largest k.
  CHECK(detail::fp8_block_exponent_bits<e4m3>(448.0f) == 0);
  CHECK(detail::fp8_block_exponent_bits<e4m3>(std::nextafter(448.0f, 1e9f)) == 1);
  CHECK(detail::fp8_block_exponent_bits<fnuz>(240.0f) == 0);
  CHECK(detail::fp8_block_exponent_bits<e4m3>(std::numeric_limits<float>::max()) == 120);
  CHECK(detail::fp8_block_exponent_bits<fnuz>(std::numeric_limits<float>::max()) == 121);
  CHECK(detail::fp8_block_exponent_bits<e4m3>(0.0f) == 0);
}

TEST_CASE("fp8 kernels' forms: decoding is fp8_value, code for code", "[core][fp8]") {
  for (unsigned c = 0; c < 256; ++c) {
    INFO("code " << c);
    CHECK(float_bits(detail::fp8_decode<e4m3>(c)) ==
          float_bits(fp8_value(e4m3, static_cast<std::uint8_t>(c))));
    CHECK(float_bits(detail::fp8_decode<fnuz>(c)) ==
          float_bits(fp8_value(fnuz, static_cast<std::uint8_t>(c))));
  }
  CHECK(detail::fp8_decode<e4m3>(0x01) == 0x1p-9f);
  CHECK(detail::fp8_decode<fnuz>(0xff) == -240.0f);
}

TEST_CASE("fp8 kernels' forms: float16 widening is to_float, value for value", "[core][fp8]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    INFO("half bits " << h);
    CHECK(float_bits(detail::float16_widen(h)) ==
          float_bits(float16::from_bits(static_cast<std::uint16_t>(h)).to_float()));
  }
}

TEST_CASE("fp8 kernels' forms: below the plain exponent a store cannot saturate", "[core][fp8]") {
  // fp8_max * 2^k within T's largest finite value at the plain k, beyond it one k higher.
  const auto check = [](auto t, fp8_format f, int plain, double largest) {
    (void)t;
    const double top = static_cast<double>(fp8_max(f));
    CHECK(std::ldexp(top, plain) <= largest);
    CHECK(std::ldexp(top, plain + 1) > largest);
  };
  const double flt = std::numeric_limits<float>::max(), bf = 0x1.fep127, half = 65504.0;
  check(0.0f, e4m3, detail::fp8_store_plain_k<float, e4m3>, flt);
  check(0.0f, fnuz, detail::fp8_store_plain_k<float, fnuz>, flt);
  check(0.0f, e4m3, detail::fp8_store_plain_k<bfloat16, e4m3>, bf);
  check(0.0f, fnuz, detail::fp8_store_plain_k<bfloat16, fnuz>, bf);
  check(0.0f, e4m3, detail::fp8_store_plain_k<float16, e4m3>, half);
  check(0.0f, fnuz, detail::fp8_store_plain_k<float16, fnuz>, half);
  CHECK(detail::fp8_store_plain_k<float16, e4m3> == 7);  // 448 * 128 = 57344 <= 65504
}
