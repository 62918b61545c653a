// 16 bytes as the kernels move them (one vector load or store), and the elements they hold.
//
// The kernels take elements out of a vector and put them back by shifts of its four words, not
// through a pointer to it: a vector whose address is taken, and which a loop then indexes by a
// value the compiler does not know, lives in local memory (nvcc stored the ll kernel's operands
// to the stack and read them back before each add). Both targets are little-endian: element i
// of a T holds bytes [i * sizeof(T), (i + 1) * sizeof(T)) of the vector, as in memory.
#pragma once

#include <cstdint>
#include <utility>

#include "relay/core/config.hpp"

namespace relay::gpu {

// 16 bytes that the compilers move with one vector load or store (ld.global.v4 on NVIDIA,
// global_load_dwordx4 on AMD). Not the runtimes' uint4: HIP's is not trivially copyable, and
// both kernels bit-cast it.
struct alignas(16) vec16 {
  std::uint32_t w[4];
};

// Element i (0 <= i < 16 / sizeof(T)) of the Ts that `x` holds.
template <class T>
RELAY_HOST_DEVICE constexpr T vec16_element(const vec16& x, int i) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 8) {
    return __builtin_bit_cast(T, static_cast<std::uint64_t>(x.w[2 * i + 1]) << 32 | x.w[2 * i]);
  } else if constexpr (sizeof(T) == 4) {
    return __builtin_bit_cast(T, x.w[i]);
  } else if constexpr (sizeof(T) == 2) {
    return __builtin_bit_cast(T, static_cast<std::uint16_t>(x.w[i / 2] >> (16 * (i % 2))));
  } else {
    return __builtin_bit_cast(T, static_cast<std::uint8_t>(x.w[i / 4] >> (8 * (i % 4))));
  }
}

namespace detail {
// Element i of a vector cleared where it lies: its bits or-ed into the words.
template <class T>
RELAY_HOST_DEVICE constexpr void vec16_put(vec16& y, int i, T t) {
  if constexpr (sizeof(T) == 8) {
    // Not const: nvcc 13's front end crashes evaluating a const integer made by a bit cast.
    std::uint64_t b = __builtin_bit_cast(std::uint64_t, t);
    y.w[2 * i] = static_cast<std::uint32_t>(b);
    y.w[2 * i + 1] = static_cast<std::uint32_t>(b >> 32);
  } else if constexpr (sizeof(T) == 4) {
    y.w[i] = __builtin_bit_cast(std::uint32_t, t);
  } else if constexpr (sizeof(T) == 2) {
    y.w[i / 2] |= static_cast<std::uint32_t>(__builtin_bit_cast(std::uint16_t, t))
                  << (16 * (i % 2));
  } else {
    y.w[i / 4] |= static_cast<std::uint32_t>(__builtin_bit_cast(std::uint8_t, t)) << (8 * (i % 4));
  }
}
template <class T, int... I>
RELAY_HOST_DEVICE constexpr vec16 vec16_of(const T* t, std::integer_sequence<int, I...>) {
  vec16 y{};
  (vec16_put(y, I, t[I]), ...);  // a fold: no loop for a compiler to leave rolled
  return y;
}
}  // namespace detail

// The vector of the 16 / sizeof(T) elements t[0], t[1], ...
template <class T>
RELAY_HOST_DEVICE constexpr vec16 vec16_of(const T* t) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  return detail::vec16_of(t, std::make_integer_sequence<int, 16 / sizeof(T)>{});
}

}  // namespace relay::gpu
