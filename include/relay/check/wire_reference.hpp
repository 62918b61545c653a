// The naive reference for calls on an fp8 wire: every output against the exact
// (long double) result of its definition, within the documented bound (docs/schedules.md, "fp8
// on the wire"), and the non-finite rules. Like reference.hpp it shares only core/'s vocabulary
// with what it checks: no plan, no blocks, no quantizer.
//
// The bound for an output whose exact value is S, from A contributions (1 for all-gather and
// all-to-all), each quantized on at most h hops (a value crosses h links; a sum crosses as one):
//
//   |r - S| <= u |S| + (1 + u) Q + u A M + (A + 1) u32 (1 + u)^2 (sum_j |x_j| + Q + A M)
//              + (h + 2) eta
//   Q = ((1 + e)^h - 1) A (M + F / e),   e = e8 + u (1 + e8),   F = (1 + u) f8 2^(t - 126)
//   e8 = 2^-4 + 2^-22 + f8,   f8 = 2^-18 + 2^-30
//
// M: the largest finite magnitude of any contribution within 127 elements of the output's index
// (a superset of every block the element travelled in: a block is 128 consecutive elements of
// one transfer). t: the encoding's target exponent, 8 (e4m3) or 7 (e4m3_fnuz). Per quantization
// of a value y in a block whose finite magnitudes are at most B, fp8_block.hpp's bound gives
// (2^-4 + 2^-22) |y| + f8 max(B, 2^(t - 126)) <= e8 B + f8 2^(t - 126); storing the arrival in
// the element type rounds it once more, by at most u (1 + e8) B + u f8 2^(t - 126) and half of
// eta: in all e B + F, the eta terms below. F is the floor's share: a block whose largest
// magnitude is below 2^(t - 126) (float32 and bfloat16 subnormals and their smallest normals)
// keeps the scale 2^-126, so its elements round to multiples of fp8's subnormal step there
// however small M is (e4m3: up to 2^-136 they arrive as zero). u: the element type's unit
// roundoff (2^-24, 2^-11, 2^-8 for float32, float16, bfloat16); u32 = 2^-24; eta: the type's
// subnormal step. AVG divides S, sum_j |x_j|, Q and A M by A. (u A M: a partial sum stored in the
// element type, precision::native_partials, rounds before it crosses.)
//
// Non-finite inputs: where a contribution is NaN the output must be NaN; where one is an
// infinity it must be NaN or an infinity (an infinity that crosses a link arrives as NaN).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "relay/check/reference.hpp"
#include "relay/core/fp8.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay::reference {

// h: how many links a value crosses at most, each a quantization on an fp8 wire: one on the
// direct route (but its allreduce at A > 2: reduce-scatter, then all-gather of the sums), two on
// every other (to a helper and on, or a sum sent on after it was reduced).
constexpr int wire_hops(collective c, route r, int active) {
  return r == route::direct && !(c == collective::allreduce && active > 2) ? 1 : 2;
}

// e8 and f8 (above): one quantization's error per unit of its block's largest magnitude, the
// fp8 rounding's relative part and the subnormal step's share, arriving as a float.
inline long double fp8_subnormal_share() {
  return std::ldexp(1.0L, -18) + std::ldexp(1.0L, -30);
}
inline long double fp8_float_error() {
  return std::ldexp(1.0L, -4) + std::ldexp(1.0L, -22) + fp8_subnormal_share();
}

// e: one quantization's error per unit of its block's largest magnitude, the arrival stored in
// an element type of unit roundoff u.
inline long double fp8_unit_error(long double u) {
  return fp8_float_error() + u * (1 + fp8_float_error());
}

// F: one quantization's absolute error floor, the subnormal step's share at the scale 2^-126
// that blocks of the smallest magnitudes keep.
inline long double fp8_error_floor(fp8_format f, long double u) {
  return (1 + u) * fp8_subnormal_share() * std::ldexp(1.0L, (f == fp8_format::e4m3 ? 8 : 7) - 126);
}

// The bound above for one output of element type T: `want` is S, `magnitude` sum_j |x_j| (both
// divided for AVG already), `M` the largest finite magnitude within 127 elements, `contributions`
// A (1 for all-gather and all-to-all), `divide` A for AVG and 1 otherwise.
template <class T>
long double fp8_bound(long double want, long double magnitude, long double M,
                      long double contributions, long double divide, fp8_format f, int hops) {
  const long double u = detail::storage_roundoff<T>(), u32 = std::ldexp(1.0L, -24);
  const long double AM = contributions * M / divide, e = fp8_unit_error(u);
  // Per quantization: at most e |C| M + F <= e |C| (M + F / e) for a value of |C| >= 1
  // contributions (see above), compounded over the hops like the rest.
  const long double Q =
      (std::pow(1 + e, hops) - 1) * contributions * (M + fp8_error_floor(f, u) / e) / divide;
  return u * std::fabs(want) + (1 + u) * Q + u * AM +
         (contributions + 1) * u32 * (1 + u) * (1 + u) * (magnitude + Q + AM) +
         (hops + 2) * detail::smallest_step<T>();
}

struct wire_check {
  std::int64_t wrong = 0;
  std::string first;
  // The largest |r - S| / |S| over outputs with S finite and nonzero (relay-bench's column).
  long double max_relative_error = 0;
};

namespace detail {

// %g with a float's 9 digits: std::to_string's fixed 6 decimals print every subnormal as 0.
inline std::string number(long double v) {
  char text[48];
  std::snprintf(text, sizeof text, "%.9Lg", v);
  return text;
}

// Per index y of one input space: the largest finite magnitude over `sources` at y; then the
// same over 128-aligned blocks, whose three neighbours around y cover every index within 127.
struct window_max {
  static constexpr std::int64_t width = 128;
  std::vector<long double> block;
  long double at(std::int64_t y) const {
    const std::int64_t b = y / width, last = static_cast<std::int64_t>(block.size()) - 1;
    long double m = block[static_cast<std::size_t>(b)];
    if (b > 0) m = std::max(m, block[static_cast<std::size_t>(b - 1)]);
    if (b < last) m = std::max(m, block[static_cast<std::size_t>(b + 1)]);
    return m;
  }
};

template <class T>
window_max window_of(const std::vector<const std::byte*>& sources, std::int64_t length) {
  window_max w;
  w.block.assign(static_cast<std::size_t>((length + window_max::width - 1) / window_max::width + 1),
                 0.0L);
  for (const std::byte* s : sources)
    for (std::int64_t y = 0; y < length; ++y) {
      const long double v = std::fabs(as_number(load<T>(s, y)));
      long double& m = w.block[static_cast<std::size_t>(y / window_max::width)];
      if (std::isfinite(static_cast<double>(v)) && v > m) m = v;
    }
  return w;
}

// The windows of group g's inputs: one over all of them for a reduction (which mixes every
// contribution in one block), one per active rank for a copy (which carries one rank's data).
template <class T>
std::vector<window_max> windows_of(const call_data& call, std::size_t g) {
  const auto A = static_cast<std::int64_t>(call.groups[g].size());
  const std::int64_t length = input_elements(call.coll, static_cast<int>(A), call.counts[g]);
  std::vector<const std::byte*> in;
  for (std::int64_t j = 0; j < A; ++j)
    in.push_back(call.input(g, j));
  std::vector<window_max> windows;
  if (reduces(call.coll))
    windows.push_back(window_of<T>(in, length));
  else
    for (const std::byte* s : in)
      windows.push_back(window_of<T>({s}, length));
  return windows;
}

}  // namespace detail

// Checks the outputs of `call`, on an fp8 wire of format `f`, each value quantized on at most
// `hops` hops, against its inputs. Floating dtypes only. `only_rank` >= 0: that rank's output
// alone (the others' may be empty), as check_outputs.
inline wire_check check_outputs_fp8(const call_data& call, fp8_format f, int hops,
                                    int only_rank = -1) {
  const collective c = call.coll;
  wire_check report;
  auto check = [&](auto zero) {
    using T = decltype(zero);
    std::vector<std::vector<detail::window_max>> windows;
    for (std::size_t g = 0; g < call.groups.size(); ++g)
      windows.push_back(detail::windows_of<T>(call, g));
    detail::for_each_output(call, [&](const detail::output_element& e) {
      if (only_rank >= 0 && e.rank != only_rank) return;
      const long double got = detail::as_number(detail::load<T>(e.out, e.x));
      long double want = 0, magnitude = 0, M = 0, contributions = 1;
      bool nan = false, inf = false;
      if (reduces(c)) {
        for (std::int64_t j = 0; j < e.A; ++j) {
          const long double v = detail::as_number(detail::load<T>(call.input(e.g, j), e.from));
          nan |= std::isnan(static_cast<double>(v));
          inf |= std::isinf(static_cast<double>(v));
          want += v;
          magnitude += std::fabs(v);
        }
        M = windows[e.g][0].at(e.from);
        contributions = static_cast<long double>(e.A);
      } else {
        want = detail::as_number(detail::load<T>(call.input(e.g, e.source), e.from));
        nan = std::isnan(static_cast<double>(want));
        inf = std::isinf(static_cast<double>(want));
        magnitude = std::fabs(want);
        M = windows[e.g][static_cast<std::size_t>(e.source)].at(e.from);
      }
      bool ok = true;
      long double bound = 0;
      if (nan) {
        ok = std::isnan(static_cast<double>(got));
      } else if (inf) {
        ok = std::isnan(static_cast<double>(got)) ||
             (std::isinf(static_cast<double>(got)) && (got > 0) == (want > 0)) ||
             (reduces(c) && std::isinf(static_cast<double>(got)));
      } else {
        const long double divide = call.op == reduce_op::avg && reduces(c) ? contributions : 1;
        want /= divide;
        bound = fp8_bound<T>(want, magnitude / divide, M, contributions, divide, f, hops);
        const long double error = std::fabs(got - want);
        ok = std::isfinite(static_cast<double>(got)) && error <= bound;
        if (ok && want != 0)
          report.max_relative_error = std::max(report.max_relative_error, error / std::fabs(want));
      }
      if (!ok && report.wrong++ == 0)
        report.first = e.where() + ": got " + detail::number(got) + ", want " +
                       detail::number(want) + " (block maximum " + detail::number(M) + ", bound " +
                       detail::number(bound) + ")";
    });
  };
  switch (call.type) {
    case dtype::float32: check(float{}); break;
    case dtype::float16: check(float16{}); break;
    case dtype::bfloat16: check(bfloat16{}); break;
    default: report.wrong = -1, report.first = "the fp8 wire takes floating dtypes only";
  }
  return report;
}

}  // namespace relay::reference
