// The naive reference: each collective written once more from its definition, as plain loops
// over every output element. No schedule, no plan, no chunking, and none of the library's
// arithmetic (core/reduction.hpp): it shares only core/'s vocabulary with the executors it checks,
// so a mistake in a schedule, a plan or an executor is not repeated here. The tests check every
// executor against it; relay-plan --run checks its call with it.
//
// Integers are exact (the sum wraps in the type's own width, as NCCL's does; AVG divides that sum
// once, truncating); floating results are computed in long double and compared within a bound
// derived from the dtype, the number of contributions and how partial sums are stored
// (docs/schedules.md, "Precision").
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"

namespace relay::reference {

struct mismatch_report {
  std::int64_t wrong = 0;  // elements outside the bound
  std::string first;       // where the first one is, and what it holds
};

namespace detail {

template <class T>
long double as_number(T x) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
    return x.to_float();
  else
    return static_cast<long double>(x);
}

// The binary exponents of a storage type's unit roundoff and of its smallest positive value
// (double's for the types that are not floating point: no rounding reaches them).
struct float_format {
  int roundoff, smallest;
};
template <class T>
constexpr float_format format_of() {
  if constexpr (std::is_same_v<T, float16>) return {-11, -24};
  if constexpr (std::is_same_v<T, bfloat16>) return {-8, -133};
  if constexpr (std::is_same_v<T, float>) return {-24, -149};
  return {-53, -1074};
}

// Unit roundoff of the storage type and of the arithmetic relay reduces in.
template <class T>
long double storage_roundoff() {
  return std::ldexp(1.0L, format_of<T>().roundoff);
}
template <class T>
long double accumulator_roundoff() {
  return std::is_same_v<T, double> ? std::ldexp(1.0L, -53) : std::ldexp(1.0L, -24);
}

// The smallest positive value of the storage type: slack for results near zero.
template <class T>
long double smallest_step() {
  return std::ldexp(1.0L, format_of<T>().smallest);
}

template <class T>
T load(const std::byte* base, std::int64_t index) {
  T x;
  std::memcpy(&x, base + index * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
  return x;
}

}  // namespace detail

// Checks `outputs` (host copies, indexed by rank) of one call against `inputs` (the host data
// the call started from). Every active rank's output is compared element by element. `exact`:
// the inputs' sums are representable (as tests/support/exact_sums.hpp makes them), so each
// floating result must be that sum's bits, rounded once, instead of lying within the bound.
inline mismatch_report check_outputs(collective c, dtype type, reduce_op op,
                                     const std::vector<std::vector<int>>& groups,
                                     std::span<const std::int64_t> counts,
                                     const std::vector<std::vector<std::byte>>& inputs,
                                     const std::vector<std::vector<std::byte>>& outputs,
                                     precision partials = precision::fp32_partials,
                                     bool exact = false) {
  mismatch_report report;
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const auto& ranks = groups[g];
      const auto A = static_cast<std::int64_t>(ranks.size());
      const std::int64_t n = counts[g];
      for (std::int64_t k = 0; k < A; ++k) {
        const int me = ranks[static_cast<std::size_t>(k)];
        const std::byte* out = outputs[static_cast<std::size_t>(me)].data();
        const std::int64_t length = output_elements(c, static_cast<int>(A), n);
        for (std::int64_t x = 0; x < length; ++x) {
          const T got = detail::load<T>(out, x);
          bool ok = true;
          long double want = 0;
          if (!reduces(c)) {  // one contribution: exact, bit for bit
            const std::int64_t j = x / n, y = x % n;
            const std::int64_t from = c == collective::all_to_all ? k * n + y : y;
            const T expected = detail::load<T>(
                inputs[static_cast<std::size_t>(ranks[static_cast<std::size_t>(j)])].data(), from);
            ok = std::memcmp(&got, &expected, sizeof(T)) == 0;
            want = detail::as_number(expected);
          } else {
            const std::int64_t from = c == collective::reduce_scatter ? k * n + x : x;
            if constexpr (std::is_integral_v<T>) {
              using U = std::make_unsigned_t<T>;
              U sum = 0;
              for (std::int64_t j = 0; j < A; ++j)
                sum = static_cast<U>(
                    sum +
                    static_cast<U>(detail::load<T>(
                        inputs[static_cast<std::size_t>(ranks[static_cast<std::size_t>(j)])].data(),
                        from)));
              T expected = static_cast<T>(sum);
              if (op == reduce_op::avg) expected = static_cast<T>(expected / static_cast<T>(A));
              ok = got == expected;
              want = static_cast<long double>(expected);
            } else {
              long double magnitude = 0, partial = 0;
              for (std::int64_t j = 0; j < A; ++j) {
                const long double v = detail::as_number(detail::load<T>(
                    inputs[static_cast<std::size_t>(ranks[static_cast<std::size_t>(j)])].data(),
                    from));
                want += v;
                magnitude += std::fabs(v);
                if (j != k) partial += std::fabs(v);
              }
              if (op == reduce_op::avg) want /= A, magnitude /= A, partial /= A;
              // docs/schedules.md, "Precision": the additions and the division round in the
              // accumulator, the final store rounds once to the storage type; with native
              // partials the one partial sum of a reduce-scatter element (the contributions of
              // every rank but the owner k, the only schedule with partials) rounds once more.
              const long double u = detail::storage_roundoff<T>();
              const long double acc = detail::accumulator_roundoff<T>();
              const bool native =
                  partials == precision::native_partials && c == collective::reduce_scatter;
              const long double bound = u * std::fabs(want) +
                                        (native ? u * (1 + u) * (1 + u) * partial : 0) +
                                        (A + 1) * acc * (1 + u) * (1 + u) * magnitude +
                                        (native ? 2 : 1) * detail::smallest_step<T>();
              const long double value = detail::as_number(got);
              ok = std::isfinite(static_cast<double>(value)) && std::fabs(value - want) <= bound;
              if (exact) ok = value == want;  // T holds no two encodings of one nonzero value
            }
          }
          if (!ok && report.wrong++ == 0)
            report.first = "group " + std::to_string(g) + " rank " + std::to_string(me) +
                           " element " + std::to_string(x) + ": got " +
                           std::to_string(static_cast<double>(detail::as_number(got))) + ", want " +
                           std::to_string(static_cast<double>(want));
        }
      }
    }
  });
  return report;
}

}  // namespace relay::reference
