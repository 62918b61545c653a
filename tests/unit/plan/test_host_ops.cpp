// The host ends of an fp8 copy (plan/host_ops.hpp): the image's bytes worked by hand (the codes,
// their zero padding, one 4-byte scale per block, nothing written past them) for counts 1, 127,
// 128, 129 and 1000, and the elements dequantized back from it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/plan/host_ops.hpp"

using namespace relay;

namespace {

constexpr unsigned char poison = 0xa5;

// A plan of one fp8 copy: rank 0's `count` float32 inputs into rank 1's output.
plan one_copy(std::uint64_t count, wire_format w) {
  plan p;
  p.spec.ranks = 2;
  p.type = dtype::float32;
  p.sources = {{0, buffer::input, 0}};
  p.ops = {{0, phase::transfer, 1, 0, {1, buffer::output, 0}, count, false}};
  p.phases = {{0, phase::transfer, 0, 1}};
  p.wire.taken = w;
  p.wire_slots = {{0, 0}};
  return p;
}

// Element i of block b (b = i / 128): b + 1 at even i, -(b + 1) / 2 at odd i. The block's
// largest magnitude is b + 1, the scale (b + 1) / 256 on e4m3 and (b + 1) / 128 on fnuz, and the
// quotients are 256 and -128 (e4m3; fnuz: 128 and -64): codes 0x78 and 0xf0 on both encodings
// (e4m3 256 = 1.000 * 2^8, exponent field 15, and -128 = -1.000 * 2^7, field 14; fnuz 2^7 and
// -2^6, fields 15 and 14), every element exact.
float element(std::size_t i) {
  const auto b = static_cast<float>(i / 128 + 1);
  return i % 2 == 0 ? b : -b / 2;
}

}  // namespace

TEST_CASE("an fp8 image: the codes, zeros to a multiple of 4, a 4-byte scale per block",
          "[plan][wire][fp8]") {
  struct layout {
    std::size_t count, padding, blocks;
  };
  for (fp8_format f : {fp8_format::e4m3, fp8_format::e4m3_fnuz})
    for (const layout& l : {layout{1, 3, 1}, layout{127, 1, 1}, layout{128, 0, 1},
                            layout{129, 3, 2}, layout{1000, 0, 8}}) {
      INFO((f == fp8_format::e4m3 ? "e4m3" : "e4m3_fnuz") << ", count " << l.count);
      const plan p = one_copy(
          l.count, f == fp8_format::e4m3 ? wire_format::fp8_e4m3 : wire_format::fp8_e4m3_fnuz);
      std::vector<float> in(l.count), out(l.count, -7.0f);
      for (std::size_t i = 0; i < l.count; ++i)
        in[i] = element(i);
      const std::size_t bytes = l.count + l.padding + 4 * l.blocks;
      std::vector<unsigned char> image(bytes + 64, poison);
      auto address = [&](const plan_operand& o) {
        return reinterpret_cast<std::byte*>(o.buf == buffer::input ? in.data() : out.data());
      };
      detail::host_fp8_quantize(p, p.ops[0], image.data(), address);
      CHECK(fp8_wire_bytes(l.count) == bytes);
      for (std::size_t i = 0; i < l.count; ++i)
        if (image[i] != (i % 2 == 0 ? 0x78 : 0xf0)) FAIL("code " << i << ": " << int(image[i]));
      for (std::size_t i = l.count; i < l.count + l.padding; ++i)
        CHECK(image[i] == 0);
      const float target = f == fp8_format::e4m3 ? 256.0f : 128.0f;
      for (std::size_t b = 0; b < l.blocks; ++b) {
        float scale;
        std::memcpy(&scale, image.data() + l.count + l.padding + 4 * b, 4);
        CHECK(scale == static_cast<float>(b + 1) / target);
      }
      for (std::size_t i = bytes; i < image.size(); ++i)
        CHECK(image[i] == poison);
      detail::host_fp8_dequantize(p, p.ops[0], image.data(), address);
      CHECK(out == in);
    }
}

TEST_CASE("an fp8 image's partial last block has a scale of its own", "[plan][wire][fp8]") {
  // 130 float32: block 0 holds 0..127 with the largest 1000, block 1 holds 128 and 129, 3 and
  // 0.1. Block 1's scale is 3/256, so 0.1 travels as 8.53 (steps of 1 there: 9, code 0x51) and
  // arrives as 9 * 3/256 = 0.10546875; under block 0's scale it would have travelled as 0.0256
  // (steps of 2^-9: 13) and arrived as 0.09918212890625.
  const plan p = one_copy(130, wire_format::fp8_e4m3);
  std::vector<float> in(130, 1.0f), out(130, -7.0f);
  in[0] = 1000.0f;
  in[128] = 3.0f;
  in[129] = 0.1f;
  std::vector<unsigned char> image(fp8_wire_bytes(130), poison);
  auto address = [&](const plan_operand& o) {
    return reinterpret_cast<std::byte*>(o.buf == buffer::input ? in.data() : out.data());
  };
  detail::host_fp8_quantize(p, p.ops[0], image.data(), address);
  REQUIRE(image.size() == 140);
  CHECK(image[128] == 0x78);
  CHECK(image[129] == 0x51);  // 9 = 1.001 * 2^3: exponent field 10, fraction 001
  float scales[2];
  std::memcpy(scales, image.data() + 132, 8);
  CHECK(scales[0] == 1000.0f / 256);
  CHECK(scales[1] == 3.0f / 256);
  detail::host_fp8_dequantize(p, p.ops[0], image.data(), address);
  CHECK(out[0] == 1000.0f);
  CHECK(out[128] == 3.0f);
  CHECK(out[129] == 0.10546875f);
}
