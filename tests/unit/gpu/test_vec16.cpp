// A vector's elements by shifts (gpu/vec16.hpp) against the layout of memory: the reference is the
// elements' bytes copied into the vector (std::memcpy), which is what a reinterpret_cast reads.
#include "relay/gpu/vec16.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <random>

#include <catch2/catch.hpp>

#include "relay/core/half.hpp"

using relay::bfloat16;
using relay::gpu::vec16;
using relay::gpu::vec16_element;
using relay::gpu::vec16_of;

namespace {

template <class T>
vec16 by_memory(const std::array<T, 16 / sizeof(T)>& t) {
  vec16 y{};
  std::memcpy(&y, t.data(), 16);
  return y;
}

bool same(const vec16& a, const vec16& b) {
  return a.w[0] == b.w[0] && a.w[1] == b.w[1] && a.w[2] == b.w[2] && a.w[3] == b.w[3];
}

// Both ways for E random elements of T: vec16_of equals the bytes in memory, and each
// vec16_element is the element put there.
template <class T, class Draw>
void round_trip(std::mt19937_64& rng, std::uint64_t seed, Draw draw) {
  constexpr int E = 16 / sizeof(T);
  for (int trial = 0; trial < 200; ++trial) {
    std::array<T, E> t{};
    for (T& x : t)
      x = draw(rng);
    const vec16 v = vec16_of<T>(t.data());
    INFO("seed " << seed << ", trial " << trial << ", element size " << sizeof(T));
    REQUIRE(same(v, by_memory(t)));
    const vec16 m = by_memory(t);
    for (int i = 0; i < E; ++i) {
      const T e = vec16_element<T>(m, i);
      REQUIRE(std::memcmp(&t[static_cast<std::size_t>(i)], &e, sizeof(T)) == 0);
    }
  }
}

}  // namespace

TEST_CASE("vec16: element i lies at bytes i * size up to (i + 1) * size, worked by hand",
          "[gpu][vec16]") {
  // Eight 16-bit values 0x0101 * (i + 1): word 0 holds elements 0 and 1, the first in its low
  // half: 0x0202'0101.
  constexpr std::uint16_t h[8] = {0x0101, 0x0202, 0x0303, 0x0404, 0x0505, 0x0606, 0x0707, 0x0808};
  constexpr vec16 v = vec16_of<std::uint16_t>(h);
  STATIC_REQUIRE(v.w[0] == 0x0202'0101u);
  STATIC_REQUIRE(v.w[3] == 0x0808'0707u);
  STATIC_REQUIRE(vec16_element<std::uint16_t>(v, 5) == 0x0606);
  // Bytes: word 1 holds bytes 4..7, byte 4 lowest.
  constexpr std::uint8_t b[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  constexpr vec16 u = vec16_of<std::uint8_t>(b);
  STATIC_REQUIRE(u.w[1] == 0x0706'0504u);
  STATIC_REQUIRE(vec16_element<std::uint8_t>(u, 13) == 13);
  // 64-bit: element 1 is words 2 (low) and 3 (high).
  constexpr std::uint64_t d[2] = {0x1111'2222'3333'4444ull, 0x5555'6666'7777'8888ull};
  constexpr vec16 x = vec16_of<std::uint64_t>(d);
  STATIC_REQUIRE(x.w[2] == 0x7777'8888u);
  STATIC_REQUIRE(x.w[3] == 0x5555'6666u);
  STATIC_REQUIRE(vec16_element<std::uint64_t>(x, 1) == 0x5555'6666'7777'8888ull);
  // A bfloat16 element: its bits, 1.0 = 0x3F80, in the high half of word 0 as element 1.
  constexpr bfloat16 f[8] = {bfloat16::from_bits(0), bfloat16::from_bits(0x3F80)};
  STATIC_REQUIRE(vec16_of<bfloat16>(f).w[0] == 0x3F80'0000u);
  STATIC_REQUIRE(vec16_element<bfloat16>(vec16_of<bfloat16>(f), 1).bits == 0x3F80);
}

TEST_CASE("vec16: random elements of every width against the bytes in memory", "[gpu][vec16]") {
  const std::uint64_t seed = 20261207;
  std::mt19937_64 rng(seed);
  round_trip<std::uint8_t>(rng, seed, [](auto& r) { return static_cast<std::uint8_t>(r()); });
  round_trip<bfloat16>(
      rng, seed, [](auto& r) { return bfloat16::from_bits(static_cast<std::uint16_t>(r())); });
  round_trip<float>(rng, seed,
                    [](auto& r) { return std::uniform_real_distribution<float>(-1e6f, 1e6f)(r); });
  round_trip<std::int64_t>(rng, seed, [](auto& r) { return static_cast<std::int64_t>(r()); });
  round_trip<double>(
      rng, seed, [](auto& r) { return std::uniform_real_distribution<double>(-1e12, 1e12)(r); });
}
