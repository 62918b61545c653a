// Element arithmetic of a reduction, shared by the host executor and the GPU kernels so that
// both produce the same bits.
//
//   floating types: widen (fp16/bf16 to float), add the sources in the order given, divide once
//                   for AVG, round once to the storage type (to nearest even);
//   integer types:  add with two's-complement wrap-around in the type's own width (as NCCL
//                   does), divide once for AVG (truncating toward zero).
// Because integer sums wrap in their own width, a reduction split across ranks (a helper's
// partial sum, then the owner's) gives exactly the bits of one big sum.
//
// Partial sums (schedule memory space buffer::partial) are stored in the accumulator type: float
// for fp16/bf16 under precision::fp32_partials, so a split reduction rounds once, at its final
// store, exactly like one big sum in the same order. reduce_element_mixed is that arithmetic:
// each operand is either an element of T or a stored accumulator.
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
  RELAY_HOST_DEVICE static constexpr accumulator add_partial(accumulator a, accumulator p) {
    return static_cast<accumulator>(a + p);
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
  RELAY_HOST_DEVICE static constexpr Acc add_partial(Acc a, Acc p) { return a + p; }
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

// Bit s of a partial mask: source s is a stored accumulator; partial_dst_bit: so is the result.
inline constexpr std::uint32_t partial_dst_bit = std::uint32_t{1} << 31;

// One operand of a mixed reduction, widened to the accumulator.
template <class T>
RELAY_HOST_DEVICE constexpr typename reduction_traits<T>::accumulator mixed_operand(
    const void* source, bool partial, std::size_t i) {
  using R = reduction_traits<T>;
  using A = typename R::accumulator;
  return partial ? static_cast<const A*>(source)[i] : R::load(static_cast<const T*>(source)[i]);
}

// reduce_element where some operands are partials (bit s of `mask` for source s, partial_dst_bit
// for the destination). The same additions in the same order as reduce_element, so a sum split
// at a partial gives the bits of the unsplit sum. A partial result is not final: stored
// unrounded and never divided; an element result is rounded once and divided by `divisor`.
template <class T>
RELAY_HOST_DEVICE constexpr void reduce_element_mixed(void* dst, const void* const* sources, int k,
                                                      std::uint32_t mask, std::size_t i,
                                                      int divisor) {
  using R = reduction_traits<T>;
  using A = typename R::accumulator;
  A a = mixed_operand<T>(sources[0], (mask & 1u) != 0, i);
  for (int s = 1; s < k; ++s)
    a = R::add_partial(a, mixed_operand<T>(sources[s], ((mask >> s) & 1u) != 0, i));
  if ((mask & partial_dst_bit) != 0)
    static_cast<A*>(dst)[i] = a;
  else
    static_cast<T*>(dst)[i] = R::store(a, divisor);
}

}  // namespace relay
