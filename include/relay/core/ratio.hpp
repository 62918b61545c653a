// An exact rational number for compile-time cost arithmetic.
//
// Link costs are shares of the message size n (n/4, 3n/7, ...). Keeping them exact lets a
// user write `static_assert(beta_cost(s, mi300x) == ratio{1, 4})` without a tolerance.
#pragma once

#include <compare>
#include <cstdint>
#include <numeric>

namespace relay {

struct ratio {
  std::int64_t num = 0;
  std::int64_t den = 1;

  constexpr ratio() = default;
  constexpr ratio(std::int64_t n) : num(n), den(1) {}  // NOLINT: implicit from integers
  constexpr ratio(std::int64_t n, std::int64_t d) : num(n), den(d) { normalize(); }

  constexpr double to_double() const { return static_cast<double>(num) / static_cast<double>(den); }

  friend constexpr ratio operator+(ratio a, ratio b) {
    const std::int64_t g = std::gcd(a.den, b.den);
    return ratio{a.num * (b.den / g) + b.num * (a.den / g), a.den / g * b.den};
  }
  friend constexpr ratio operator-(ratio a, ratio b) { return a + ratio{-b.num, b.den}; }
  friend constexpr ratio operator*(ratio a, ratio b) {
    const std::int64_t g1 = std::gcd(a.num, b.den), g2 = std::gcd(b.num, a.den);
    const std::int64_t d1 = g1 == 0 ? 1 : g1, d2 = g2 == 0 ? 1 : g2;
    return ratio{(a.num / d1) * (b.num / d2), (a.den / d2) * (b.den / d1)};
  }
  friend constexpr ratio operator/(ratio a, ratio b) { return a * ratio{b.den, b.num}; }
  constexpr ratio& operator+=(ratio b) { return *this = *this + b; }

  friend constexpr bool operator==(ratio a, ratio b) { return a.num == b.num && a.den == b.den; }
  friend constexpr std::strong_ordering operator<=>(ratio a, ratio b) {
    // Denominators are positive after normalize(), so cross-multiplying keeps the order.
    return a.num * b.den <=> b.num * a.den;
  }

 private:
  constexpr void normalize() {
    if (den < 0) num = -num, den = -den;
    const std::int64_t g = std::gcd(num, den);
    if (g > 1) num /= g, den /= g;
    if (num == 0) den = 1;
  }
};

constexpr ratio max(ratio a, ratio b) {
  return a < b ? b : a;
}

}  // namespace relay
