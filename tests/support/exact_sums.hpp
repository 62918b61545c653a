// Inputs whose exact sum is representable in fp16/bf16 but where any rounding of a partial sum
// to the element type shows, and the check that every output is that sum, bit for bit.
//
// Per reduced element, with owner k (reduce-scatter: the rank that receives the block; allreduce:
// any rank), two other contributors a and b, B = 2^m and h = ulp(B)/2 = B * 2^-p (p = 11 for
// fp16, 8 for bf16), all multiplied by one random sign:
//
//   cancellation  x_k = -B, x_a = B, x_b = h      sum h:          B + h rounds to B, result 0
//   tie           x_k = h,  x_a = B, x_b = h      sum B + 2h:     B + h rounds to B twice, B
//
// (the tie of the rounding-twice repro: (2^-8, 1, 2^-8, 0) in bf16). The remaining contributors
// hold zero or pairs (v, -v) that cancel. A=2 (no partial sum exists) gets x_k = -B, x_a = B + 2h.
// Every value is a multiple of h below 4B, so the float accumulator sums them exactly in any
// order: one rounding at the end gives the exact sum.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"

namespace relay::testing {

// Mantissa bits of a 16-bit float type, the implicit bit included.
constexpr int mantissa_bits(dtype t) {
  return t == dtype::float16 ? 11 : 8;
}

namespace detail {

template <class T>
void store_value(std::vector<std::byte>& bytes, std::int64_t index, float v) {
  const T x = T::from_float(v);
  std::memcpy(bytes.data() + index * static_cast<std::int64_t>(sizeof(T)), &x, sizeof(T));
}

// The A contributions of one element, owner k first in the pattern's terms.
inline std::vector<float> exact_pattern(int A, int k, int p, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  const float B = std::ldexp(1.0f, pick(rng) % 5);  // 1 .. 16: fp16 keeps h normal
  const float h = std::ldexp(B, -p);
  const float sign = pick(rng) % 2 ? 1.0f : -1.0f;
  std::vector<float> x(static_cast<std::size_t>(A), 0.0f);
  std::vector<int> others;
  for (int j = 0; j < A; ++j)
    if (j != k) others.push_back(j);
  std::shuffle(others.begin(), others.end(), rng);
  auto at = [&](int j) -> float& { return x[static_cast<std::size_t>(j)]; };
  if (A == 2) {
    at(k) = -B;
    at(others[0]) = B + 2 * h;
  } else if (pick(rng) % 2) {
    at(k) = -B, at(others[0]) = B, at(others[1]) = h;
  } else {
    at(k) = h, at(others[0]) = B, at(others[1]) = h;
  }
  for (std::size_t i = 2; i + 1 < others.size(); i += 2)
    if (pick(rng) % 2) {
      const float v = static_cast<float>(1 + pick(rng) % (1 << p)) * h;  // a multiple of h <= B
      at(others[i]) = v;
      at(others[i + 1]) = -v;
    }
  for (float& v : x)
    v *= sign;
  return x;
}

}  // namespace detail

// Overwrites the active ranks' inputs (`inputs[r]`, sized for the collective) with exact-sum
// patterns. fp16/bf16 reducing collectives only; anything else is left as it is.
inline void fill_exact_sums(collective c, dtype type, const std::vector<std::vector<int>>& groups,
                            std::span<const std::int64_t> counts,
                            std::vector<std::vector<std::byte>>& inputs, std::uint64_t seed) {
  if (!reduces(c) || (type != dtype::float16 && type != dtype::bfloat16)) return;
  std::mt19937_64 rng(seed);
  const int p = mantissa_bits(type);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const int A = static_cast<int>(groups[g].size());
    const std::int64_t n = counts[g];
    const int blocks = c == collective::reduce_scatter ? A : 1;
    for (int k = 0; k < blocks; ++k)
      for (std::int64_t y = 0; y < n; ++y) {
        const int owner =
            c == collective::reduce_scatter ? k : std::uniform_int_distribution<int>(0, A - 1)(rng);
        const std::vector<float> x = detail::exact_pattern(A, owner, p, rng);
        for (int j = 0; j < A; ++j) {
          auto& bytes = inputs[static_cast<std::size_t>(groups[g][static_cast<std::size_t>(j)])];
          const std::int64_t at = k * n + y;
          if (type == dtype::float16)
            detail::store_value<float16>(bytes, at, x[static_cast<std::size_t>(j)]);
          else
            detail::store_value<bfloat16>(bytes, at, x[static_cast<std::size_t>(j)]);
        }
      }
  }
}

}  // namespace relay::testing
