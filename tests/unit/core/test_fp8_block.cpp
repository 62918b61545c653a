// fp8 blocks: the image's bytes and the scales worked by hand, blocks of equal elements and their
// sums arriving bit for bit, hand-worked codes, non-finite, zero and subnormal blocks, and the
// documented error bound on random and adversarial blocks.
#include "relay/core/fp8_block.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "support/fp8_formats.hpp"

using namespace relay;

namespace {

using relay::testing::e4m3, relay::testing::fnuz;

// The image of `count` elements: the codes, zeros up to a multiple of 4, then a 4-byte scale per
// started block of 128.
static_assert(fp8_block_elements == 128);
static_assert(fp8_wire_bytes(0) == 0);
static_assert(fp8_wire_bytes(1) == 8);        // 1 code, 3 zeros, 1 scale
static_assert(fp8_wire_bytes(127) == 132);    // 127 codes, 1 zero, 1 scale
static_assert(fp8_wire_bytes(128) == 132);    // 128 codes, 1 scale
static_assert(fp8_wire_bytes(129) == 140);    // 129 codes, 3 zeros, 2 scales
static_assert(fp8_wire_bytes(1000) == 1032);  // 1000 codes, 8 scales
static_assert(fp8_scales_at(1) == 4 && fp8_scales_at(127) == 128 && fp8_scales_at(128) == 128);
static_assert(fp8_scales_at(129) == 132 && fp8_scales_at(1000) == 1000);
static_assert(fp8_blocks(1) == 1 && fp8_blocks(128) == 1 && fp8_blocks(129) == 2);
// A multiple of 128 elements costs 33/32 bytes an element, as the cost model prices them.
static_assert(fp8_wire_bytes(1024) == 1024 + 1024 / 32);

// The target: M travels as 256 (e4m3, largest 448) or 128 (e4m3_fnuz, largest 240).
static_assert(fp8_target_exponent(e4m3) == 8 && fp8_target_exponent(fnuz) == 7);
// The scale M * 2^-e, exact; 2^-126 below M = 2^(e - 126); 0 for M = 0.
static_assert(fp8_block_scale(e4m3, 256.0f) == 1.0f);
static_assert(fp8_block_scale(fnuz, 128.0f) == 1.0f);
static_assert(fp8_block_scale(e4m3, 101.0f) == 0.39453125f);  // 101 / 256
static_assert(fp8_block_scale(fnuz, 101.0f) == 0.7890625f);   // 101 / 128
static_assert(fp8_block_scale(e4m3, 3.4028234663852886e38f) == 0x1.fffffep119f);
static_assert(fp8_block_scale(e4m3, 0x1p-118f) == 0x1p-126f);  // exact, not floored
static_assert(fp8_block_scale(e4m3, 0x1.8p-118f) == 0x1.8p-126f);
static_assert(fp8_block_scale(e4m3, 0x1.fffffep-119f) == 0x1p-126f);  // floored
static_assert(fp8_block_scale(fnuz, 0x1.8p-119f) == 0x1.8p-126f);
static_assert(fp8_block_scale(fnuz, 0x1.fffffep-120f) == 0x1p-126f);
static_assert(fp8_block_scale(e4m3, 0x1p-149f) == 0x1p-126f);
static_assert(fp8_block_scale(e4m3, 0.0f) == 0.0f && fp8_block_scale(fnuz, 0.0f) == 0.0f);

const float quiet_nan = std::numeric_limits<float>::quiet_NaN();
const float infinity = std::numeric_limits<float>::infinity();

const char* name_of(fp8_format f) {
  return f == e4m3 ? "e4m3" : "e4m3_fnuz";
}

// One block of `x` through fp8_quantize_block (into poisoned codes) and back.
struct round_trip {
  float scale = -1;
  std::vector<std::uint8_t> codes;
  std::vector<float> arrived;
};
round_trip through(fp8_format f, const std::vector<float>& x) {
  round_trip r;
  r.codes.assign(x.size(), 0xaa);
  r.scale = fp8_quantize_block(f, x.data(), static_cast<int>(x.size()), r.codes.data());
  for (std::uint8_t c : r.codes)
    r.arrived.push_back(fp8_dequantize(f, c, r.scale));
  return r;
}

}  // namespace

TEST_CASE("fp8 blocks: a block of equal elements arrives bit for bit", "[core][fp8]") {
  // 101 (RCCLX's constant-fill tests): the scale is 101/256 (e4m3) or 101/128 (fnuz), every
  // element travels as the target, 256 or 128, which is code 0x78 on both encodings (exponent
  // field 15, fraction 0), and arrives as 256 * 101/256: 101. A power-of-two scale would send it
  // as 404 * 2^-2, which fp8's 4 significant bits make 416 * 2^-2: 104.
  for (fp8_format f : {e4m3, fnuz}) {
    INFO(name_of(f));
    const round_trip r = through(f, std::vector<float>(128, 101.0f));
    CHECK(r.scale == (f == e4m3 ? 0.39453125f : 0.7890625f));
    for (std::size_t i = 0; i < 128; ++i) {
      CHECK(r.codes[i] == 0x78);
      CHECK(r.arrived[i] == 101.0f);
    }
    // -101: the same code with the sign bit.
    const round_trip n = through(f, std::vector<float>(128, -101.0f));
    CHECK(n.codes[7] == 0xf8);
    CHECK(n.arrived[7] == -101.0f);
  }
  // Any normal constant from 2^(e - 126) up, whatever its significant bits, and a partial block.
  const float constants[] = {102.0f, 203.0f,           0.1f,      1.0f / 3.0f, 65504.0f,
                             1e30f,  -0x1.fffffep127f, 0x1p-118f, 7.0e-3f,     16777215.0f};
  for (fp8_format f : {e4m3, fnuz})
    for (float c : constants)
      for (std::size_t n : {std::size_t{1}, std::size_t{77}, std::size_t{128}}) {
        INFO(name_of(f) << ": " << n << " elements of " << c);
        const round_trip r = through(f, std::vector<float>(n, c));
        for (float a : r.arrived)
          CHECK(float_bits(a) == float_bits(c));
      }
}

TEST_CASE("fp8 blocks: 102 and 101 sum to exactly 203 through quantize, sum and requantize",
          "[core][fp8]") {
  // torchcomms' example at A=2: a reduce-scatter's two contributions cross to a helper, are
  // summed there in fp32 and the sum crosses on. 102 and 101 arrive exactly, 203 is their exact
  // sum, and a block of 203 arrives exactly too; so do the A=4 example's 101 + 102 + 103 + 104.
  for (fp8_format f : {e4m3, fnuz}) {
    INFO(name_of(f));
    const round_trip a = through(f, std::vector<float>(128, 102.0f));
    const round_trip b = through(f, std::vector<float>(128, 101.0f));
    std::vector<float> sum(128);
    for (std::size_t i = 0; i < 128; ++i)
      sum[i] = a.arrived[i] + b.arrived[i];
    const round_trip s = through(f, sum);
    for (float v : s.arrived)
      CHECK(v == 203.0f);
    std::vector<float> four(128, 0.0f);
    for (float c : {101.0f, 102.0f, 103.0f, 104.0f}) {
      const round_trip r = through(f, std::vector<float>(128, c));
      for (std::size_t i = 0; i < 128; ++i)
        four[i] += r.arrived[i];
    }
    for (float v : through(f, four).arrived)
      CHECK(v == 410.0f);
  }
}

TEST_CASE("fp8 blocks: a hand-worked block", "[core][fp8]") {
  // M = 3: the scale is 3/256 = 0.01171875 (e4m3) or 3/128 (fnuz); the quotients x / s are
  // twice as large on e4m3 as on fnuz, whose bias is one higher, so both give the same codes:
  //   3       -> 256 (128): 1.000 * 2^8, exponent field 15: 0x78, arrives as 3
  //   -0.5    -> -42.67 (-21.33): steps of 4 (2) there, 11 of them: -44 (-22) = -1.011 * 2^5,
  //              field 12: 0xe3, arrives as -44 * 3/256 = -0.515625
  //   1       -> 85.33 (42.67): steps of 8 (4), 11 of them: 88 = 1.011 * 2^6: 0x6b, 1.03125
  //   2^-12   -> 2^-4 / 3 = 0.02083 (0.01042): 10.67 steps of 2^-9 (2^-10), 11 of them:
  //              1.011 * 2^-6 (2^-7), field 1: 0x0b, arrives as 11 * 2^-9 * 3/256 = 33 * 2^-17
  //   0       -> 0x00; 1e-7 -> 8.5e-6, below half of the smallest subnormal (2^-10): 0x00
  const std::vector<float> x{3.0f, -0.5f, 1.0f, 0x1p-12f, 0.0f, 1e-7f};
  for (fp8_format f : {e4m3, fnuz}) {
    INFO(name_of(f));
    const round_trip r = through(f, x);
    CHECK(r.scale == (f == e4m3 ? 0.01171875f : 0.0234375f));
    CHECK(r.codes == std::vector<std::uint8_t>{0x78, 0xe3, 0x6b, 0x0b, 0x00, 0x00});
    CHECK(r.arrived == std::vector<float>{3.0f, -0.515625f, 1.03125f, 33 * 0x1p-17f, 0.0f, 0.0f});
  }
}

TEST_CASE("fp8 blocks: a NaN or an infinity stays in its own element", "[core][fp8]") {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> value(0.0f, 100.0f);
  for (fp8_format f : {e4m3, fnuz}) {
    std::vector<float> x(128), clean(128);
    for (float& v : x)
      v = value(rng);
    clean = x;
    x[5] = quiet_nan;
    x[9] = infinity;
    x[120] = -infinity;
    clean[5] = clean[9] = clean[120] = 0.0f;  // no influence on the finite maximum
    const round_trip got = through(f, x), want = through(f, clean);
    CHECK(got.scale == want.scale);
    for (std::size_t i = 0; i < 128; ++i) {
      INFO(name_of(f) << ", element " << i);
      if (i == 5 || i == 9 || i == 120) {
        CHECK(got.codes[i] == (f == e4m3 ? 0x7f : 0x80));
        CHECK(std::isnan(got.arrived[i]));
      } else {
        CHECK(got.codes[i] == want.codes[i]);
        CHECK(std::isfinite(got.arrived[i]));
      }
    }
  }
}

TEST_CASE("fp8 blocks: zeros, only non-finite elements, float subnormals, the scale's floor",
          "[core][fp8]") {
  for (fp8_format f : {e4m3, fnuz}) {
    INFO(name_of(f));
    const std::uint8_t minus_zero = f == e4m3 ? 0x80 : 0x00, nan = f == e4m3 ? 0x7f : 0x80;
    // No finite nonzero element: the scale 0; zeros keep their sign where the encoding has one.
    const round_trip zeros = through(f, {0.0f, -0.0f, -0.0f, 0.0f});
    CHECK(float_bits(zeros.scale) == 0u);
    CHECK(zeros.codes == std::vector<std::uint8_t>{0x00, minus_zero, minus_zero, 0x00});
    CHECK(float_bits(zeros.arrived[1]) == (f == e4m3 ? 0x80000000u : 0u));
    CHECK(float_bits(zeros.arrived[0]) == 0u);
    const round_trip odd = through(f, {quiet_nan, infinity, -infinity, -0.0f});
    CHECK(float_bits(odd.scale) == 0u);
    CHECK(odd.codes == std::vector<std::uint8_t>{nan, nan, nan, minus_zero});
    CHECK((std::isnan(odd.arrived[0]) && std::isnan(odd.arrived[1]) && std::isnan(odd.arrived[2])));
    CHECK(odd.arrived[3] == 0.0f);
    // Float subnormals: M = 0x1.8p-135 is below 2^(e - 126), so the scale is the floor 2^-126
    // and the quotients are x * 2^126. 0x1.8p-9 is 1.5 steps of e4m3's 2^-9 (a tie: 2 steps,
    // 2^-8, arriving as 2^-134) and 3 of fnuz's 2^-10 (exact); -2^-14 and 2^-23 are below half a
    // step: zeros.
    const round_trip tiny = through(f, {0x1.8p-135f, -0x1p-140f, 0x1p-149f});
    CHECK(tiny.scale == 0x1p-126f);
    CHECK(tiny.codes == std::vector<std::uint8_t>{
                            f == e4m3 ? std::uint8_t{0x02} : std::uint8_t{0x03}, minus_zero, 0x00});
    CHECK(tiny.arrived[0] == (f == e4m3 ? 0x1p-134f : 0x1.8p-135f));
    CHECK(float_bits(tiny.arrived[1]) == (f == e4m3 ? 0x80000000u : 0u));
    CHECK(tiny.arrived[2] == 0.0f);
    // At and just below the floor's edge 2^(e - 126): M still travels as a power of two there
    // (2^-118 as 256 on e4m3; 2^-119 as 128 on both) and arrives exactly, with a neighbour of 4
    // significant bits.
    const round_trip edge = through(f, {0x1p-119f, -0x1.8p-120f});
    CHECK(edge.scale == 0x1p-126f);
    CHECK(edge.arrived == std::vector<float>{0x1p-119f, -0x1.8p-120f});
    const round_trip top = through(f, {0x1p-118f, 0x1.2p-121f});
    CHECK(top.scale == (f == e4m3 ? 0x1p-126f : 0x1p-125f));
    CHECK(top.arrived == std::vector<float>{0x1p-118f, 0x1.2p-121f});
  }
}

TEST_CASE(
    "fp8 blocks: random and adversarial blocks arrive within the bound, their largest exactly",
    "[core][fp8][property]") {
  // fp8_block.hpp's bound: |arrived - x| <= (2^-4 + 2^-22) |x| + (2^-18 + 2^-30) G, with
  // G = max(M, 2^(e - 126)); and the block's largest finite element arrives exactly wherever
  // M >= 2^(e - 126).
  const std::uint64_t seed = 20261201;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  std::uniform_int_distribution<int> binade(-40, 40), length(1, fp8_block_elements);
  std::uniform_int_distribution<int> kind(0, 99);
  long checked = 0, exact_maxima = 0;
  for (int block = 0; block < 8000; ++block) {
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
      const round_trip r = through(f, x);
      double M = 0;  // the largest finite magnitude, found here independently
      std::size_t largest = 0;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (std::isfinite(x[i]) && std::fabs(static_cast<double>(x[i])) > M) {
          M = std::fabs(static_cast<double>(x[i]));
          largest = i;
        }
      const double edge = std::ldexp(1.0, (f == e4m3 ? 8 : 7) - 126);
      const double G = std::max(M, edge);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double got = r.arrived[i];
        if (!std::isfinite(x[i])) {
          REQUIRE(std::isnan(got));
          continue;
        }
        const double want = x[i];
        const double bound = (0x1p-4 + 0x1p-22) * std::fabs(want) + (0x1p-18 + 0x1p-30) * G;
        if (!(std::fabs(got - want) <= bound))
          FAIL("seed " << seed << ", block " << block << ", " << name_of(f) << ", element " << i
                       << ": " << want << " arrived as " << got << ", bound " << bound << " (M "
                       << M << ", scale " << r.scale << ")");
        ++checked;
      }
      if (M >= edge) {
        if (float_bits(r.arrived[largest]) != float_bits(x[largest]))
          FAIL("seed " << seed << ", block " << block << ", " << name_of(f) << ": the largest, "
                       << x[largest] << ", arrived as " << r.arrived[largest]);
        ++exact_maxima;
      }
    }
  }
  CHECK(checked > 400000);
  CHECK(exact_maxima > 8000);
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
  // fp16: 65536 (a code of 256 at the scale 256, which no quantized block has but an image may)
  // saturates to 65504 (0x7bff); 1.5 is exact; NaN stays.
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
  // An arrival rounds once more in a 16-bit type: code 0x0d (13 * 2^-9) at the scale 1000/256
  // arrives as 1625 * 2^-14 = 0.09918212890625 (11 significant bits), which bf16's 8 round to
  // 203 * 2^-11 = 0.09912109375 (0x3dcb).
  CHECK(fp8_dequantize(e4m3, 0x0d, 1000.0f / 256) == 0.09918212890625f);
  CHECK(fp8_store<bfloat16>(fp8_dequantize(e4m3, 0x0d, 1000.0f / 256), true).bits == 0x3dcb);
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

TEST_CASE("fp8 kernels' forms: up to the plain scale a store cannot saturate", "[core][fp8]") {
  // fp8_max * s within T's largest finite value at the plain scale, beyond it at twice that.
  const auto check = [](fp8_format f, float plain, double largest) {
    const double top = static_cast<double>(fp8_max(f));
    CHECK(top * plain <= largest);
    CHECK(top * 2 * plain > largest);
  };
  const double flt = std::numeric_limits<float>::max(), bf = 0x1.fep127, half = 65504.0;
  check(e4m3, detail::fp8_store_plain_scale<float, e4m3>, flt);
  check(fnuz, detail::fp8_store_plain_scale<float, fnuz>, flt);
  check(e4m3, detail::fp8_store_plain_scale<bfloat16, e4m3>, bf);
  check(fnuz, detail::fp8_store_plain_scale<bfloat16, fnuz>, bf);
  check(e4m3, detail::fp8_store_plain_scale<float16, e4m3>, half);
  check(fnuz, detail::fp8_store_plain_scale<float16, fnuz>, half);
  CHECK(detail::fp8_store_plain_scale<float16, e4m3> == 128.0f);  // 448 * 128 = 57344 <= 65504
}
