// Count-free sizes: an affine form over the group count n and a few "quanta".
//
// Every offset and length in a relay schedule is an integer combination of 1, n and a handful of
// quanta that the plan derives from n by alignment rules (the relay chunk, the offload piece, the
// first direct region, ...). Holding the coefficients keeps a schedule independent of any count:
// properties are checked by evaluating it at representative counts, and costs by evaluating it at
// the quanta's ideal shares of n.
#pragma once

#include <array>
#include <cstdint>

#include "relay/core/ratio.hpp"

namespace relay {

inline constexpr int max_quanta = 4;
// Symbol slots: [0] the constant 1, [1] the group count n, [2 + i] quantum i.
inline constexpr int symbol_count = 2 + max_quanta;

using symbol_values = std::array<std::int64_t, symbol_count>;
using symbol_shares = std::array<ratio, symbol_count>;

struct affine {
  // A plain array: eval reads it for every operand the checks evaluate, and a subscript of
  // std::array is a call in constant evaluation.
  std::int32_t coef[symbol_count]{};

  static constexpr affine constant(std::int32_t v) { return term(0, v); }
  static constexpr affine n(std::int32_t k = 1) { return term(1, k); }
  static constexpr affine q(int i, std::int32_t k = 1) { return term(2 + i, k); }

  // One expression, not a loop: compilers price constant evaluation by the statements run, and
  // the checks evaluate every offset of every operation at every representative count.
  constexpr std::int64_t eval(const symbol_values& v) const { return eval(v.data()); }
  constexpr std::int64_t eval(const std::int64_t* x) const {
    static_assert(symbol_count == 6, "eval spells out every symbol");
    return coef[0] * x[0] + coef[1] * x[1] + coef[2] * x[2] + coef[3] * x[3] + coef[4] * x[4] +
           coef[5] * x[5];
  }
  // The value as a share of n, with every quantum at its ideal share; constants vanish.
  constexpr ratio share(const symbol_shares& v) const {
    ratio s{};
    for (int i = 1; i < symbol_count; ++i)
      if (coef[i] != 0) s += ratio{coef[i]} * v[i];
    return s;
  }
  constexpr bool is_zero() const {
    for (auto c : coef)
      if (c != 0) return false;
    return true;
  }

  friend constexpr affine operator+(affine a, const affine& b) {
    for (int i = 0; i < symbol_count; ++i)
      a.coef[i] += b.coef[i];
    return a;
  }
  friend constexpr affine operator-(affine a, const affine& b) {
    for (int i = 0; i < symbol_count; ++i)
      a.coef[i] -= b.coef[i];
    return a;
  }
  friend constexpr affine operator*(std::int32_t k, affine a) {
    for (auto& c : a.coef)
      c *= k;
    return a;
  }
  friend constexpr bool operator==(const affine&, const affine&) = default;

 private:
  static constexpr affine term(int slot, std::int32_t k) {
    affine a;
    a.coef[slot] = k;
    return a;
  }
};

// How the plan derives one quantum from n and the quanta before it:
//   value = align_down(floor(base * num / den), align_units * alignment)   (align_units 0: none)
// and, where `fallback_if_zero` names a quantum (or this one, `self`) that came out zero,
//   value = floor(fallback * fallback_num / fallback_den)
// The fallback is the spec's per-group zero-chunk rule: a group too small to relay runs direct.
struct quantum_rule {
  static constexpr std::int8_t none = -1;
  static constexpr std::int8_t self = -2;

  affine base{};
  std::int32_t num = 1, den = 1, align_units = 0;
  std::int8_t fallback_if_zero = none;
  affine fallback{};
  std::int32_t fallback_num = 1, fallback_den = 1;

  constexpr std::int64_t eval(const symbol_values& v, std::int64_t alignment) const {
    std::int64_t x = floor_div(base.eval(v) * num, den);
    if (align_units > 0) {
      const std::int64_t unit = align_units * alignment;
      x = floor_div(x, unit) * unit;
    }
    const bool zero = fallback_if_zero == self ? x == 0
                      : fallback_if_zero >= 0  ? v[2 + fallback_if_zero] == 0
                                               : false;
    if (zero) x = floor_div(fallback.eval(v) * fallback_num, fallback_den);
    return x < 0 ? 0 : x;
  }
  // The large-n share: alignment and the zero fallback vanish.
  constexpr ratio share(const symbol_shares& v) const { return base.share(v) * ratio{num, den}; }

  static constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
  }
};

}  // namespace relay
