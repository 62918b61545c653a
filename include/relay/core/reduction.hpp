// Element arithmetic of a reduction, shared by the host executor and the GPU kernels so that
// both produce the same bits.
//
//   floating types: widen (fp16/bf16 to float), add the sources in the order given, divide once
//                   for AVG, round once to the storage type (to nearest even);
//   integer types:  add with two's-complement wrap-around in the type's own width (as NCCL
//                   does), divide once for AVG (truncating toward zero).
// Because integer sums wrap in their own width, a reduction split across ranks (a helper's
// partial sum, then the owner's) gives exactly the bits of one big sum.
#pragma once

#include <cstdint>
#include <type_traits>

#include "relay/core/config.hpp"
#include "relay/core/half.hpp"

namespace relay {

template <class T>
struct reduction_traits {
  static_assert(std::is_integral_v<T>, "relay: no reduction arithmetic for this type");
  using accumulator = std::make_unsigned_t<T>;  // wraps, where signed overflow would be undefined
  RELAY_HOST_DEVICE static constexpr accumulator load(T x) { return static_cast<accumulator>(x); }
  RELAY_HOST_DEVICE static constexpr accumulator add(accumulator a, T x) {
    return static_cast<accumulator>(a + static_cast<accumulator>(x));
  }
  RELAY_HOST_DEVICE static constexpr T store(accumulator a, int divisor) {
    const T sum = static_cast<T>(a);  // modular conversion (C++20)
    return divisor > 1 ? static_cast<T>(sum / static_cast<T>(divisor)) : sum;
  }
};

template <class T, class Acc>
struct floating_reduction {
  using accumulator = Acc;
  RELAY_HOST_DEVICE static constexpr Acc load(T x) { return widen(x); }
  RELAY_HOST_DEVICE static constexpr Acc add(Acc a, T x) { return a + widen(x); }
  RELAY_HOST_DEVICE static constexpr T store(Acc a, int divisor) {
    if (divisor > 1) a = a / static_cast<Acc>(divisor);
    if constexpr (std::is_same_v<T, Acc>)
      return a;
    else
      return T::from_float(a);
  }

 private:
  RELAY_HOST_DEVICE static constexpr Acc widen(T x) {
    if constexpr (std::is_same_v<T, Acc>)
      return x;
    else
      return x.to_float();
  }
};

template <>
struct reduction_traits<float> : floating_reduction<float, float> {};
template <>
struct reduction_traits<double> : floating_reduction<double, double> {};
template <>
struct reduction_traits<float16> : floating_reduction<float16, float> {};
template <>
struct reduction_traits<bfloat16> : floating_reduction<bfloat16, float> {};

// out = (s[0][i] + s[1][i] + ... + s[k-1][i]) [/ divisor], for one element. divisor <= 1: a sum.
template <class T>
RELAY_HOST_DEVICE constexpr T reduce_element(const T* const* sources, int k, std::size_t i,
                                             int divisor) {
  using R = reduction_traits<T>;
  typename R::accumulator a = R::load(sources[0][i]);
  for (int s = 1; s < k; ++s)
    a = R::add(a, sources[s][i]);
  return R::store(a, divisor);
}

}  // namespace relay
