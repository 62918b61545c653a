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
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
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

// One call as a reference reads it: what ran, on which groups with which per-group counts, and
// host copies of every rank's input (the data the call started from) and output, indexed by rank.
struct call_data {
  collective coll;
  dtype type;
  reduce_op op;
  std::span<const std::vector<int>> groups;
  std::span<const std::int64_t> counts;
  std::span<const std::vector<std::byte>> inputs;
  std::span<const std::vector<std::byte>> outputs;

  // The input of group g's active rank j.
  const std::byte* input(std::size_t g, std::int64_t j) const {
    const int rank = groups[g][static_cast<std::size_t>(j)];
    return inputs[static_cast<std::size_t>(rank)].data();
  }
};

namespace detail {

// One output element of a call, and where its definition reads the inputs: a reduction adds every
// active rank's input at `from`; a copy (all-gather, all-to-all) takes active rank `source`'s.
struct output_element {
  std::size_t g;      // the group
  std::int64_t A, n;  // its active ranks and its count
  std::int64_t k;     // the output's active rank, `rank` in the node
  int rank;
  const std::byte* out;  // that rank's output
  std::int64_t x;        // the element's index in it
  std::int64_t source = 0, from = 0;

  // "group 0 rank 3 element 17", where a report's first mismatch is.
  std::string where() const {
    return "group " + std::to_string(g) + " rank " + std::to_string(rank) + " element " +
           std::to_string(x);
  }
};

// Calls f(e) for each element e of every active rank's output, group by group.
template <class F>
void for_each_output(const call_data& call, F&& f) {
  for (std::size_t g = 0; g < call.groups.size(); ++g) {
    const auto A = static_cast<std::int64_t>(call.groups[g].size());
    const std::int64_t n = call.counts[g];
    const std::int64_t length = output_elements(call.coll, static_cast<int>(A), n);
    for (std::int64_t k = 0; k < A; ++k) {
      const int rank = call.groups[g][static_cast<std::size_t>(k)];
      output_element e{g, A, n, k, rank, call.outputs[static_cast<std::size_t>(rank)].data(),
                       0, 0, 0};
      for (e.x = 0; e.x < length; ++e.x) {
        if (reduces(call.coll)) {
          e.from = call.coll == collective::reduce_scatter ? k * n + e.x : e.x;
        } else {
          e.source = e.x / n;
          e.from = call.coll == collective::all_to_all ? k * n + e.x % n : e.x % n;
        }
        f(std::as_const(e));
      }
    }
  }
}

}  // namespace detail

// Checks the outputs of `call` against its inputs, every active rank's element by element.
// `exact`: the inputs' sums are representable (as tests/support/exact_sums.hpp makes them), so
// each floating result must be that sum's bits, rounded once, instead of lying within the bound.
// `only_rank` >= 0: that rank's output alone (the others' outputs may be empty), as a process
// that holds every rank's input but only its own output checks it.
inline mismatch_report check_outputs(const call_data& call,
                                     precision partials = precision::fp32_partials,
                                     bool exact = false, int only_rank = -1) {
  const collective c = call.coll;
  mismatch_report report;
  visit_dtype(call.type, [&](auto zero) {
    using T = decltype(zero);
    detail::for_each_output(call, [&](const detail::output_element& e) {
      if (only_rank >= 0 && e.rank != only_rank) return;
      const T got = detail::load<T>(e.out, e.x);
      bool ok = true;
      long double want = 0;
      if (!reduces(c)) {  // one contribution: exact, bit for bit
        const T expected = detail::load<T>(call.input(e.g, e.source), e.from);
        ok = std::memcmp(&got, &expected, sizeof(T)) == 0;
        want = detail::as_number(expected);
      } else if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        U sum = 0;
        for (std::int64_t j = 0; j < e.A; ++j)
          sum = static_cast<U>(sum + static_cast<U>(detail::load<T>(call.input(e.g, j), e.from)));
        T expected = static_cast<T>(sum);
        if (call.op == reduce_op::avg) expected = static_cast<T>(expected / static_cast<T>(e.A));
        ok = got == expected;
        want = static_cast<long double>(expected);
      } else {
        long double magnitude = 0, partial = 0;
        for (std::int64_t j = 0; j < e.A; ++j) {
          const long double v = detail::as_number(detail::load<T>(call.input(e.g, j), e.from));
          want += v;
          magnitude += std::fabs(v);
          if (j != e.k) partial += std::fabs(v);
        }
        if (call.op == reduce_op::avg) want /= e.A, magnitude /= e.A, partial /= e.A;
        // docs/schedules.md, "Precision": the additions and the division round in the
        // accumulator, the final store rounds once to the storage type; with native partials the
        // one partial sum of a reduce-scatter element (the contributions of every rank but the
        // owner k, the only schedule with partials) rounds once more.
        const long double u = detail::storage_roundoff<T>();
        const long double acc = detail::accumulator_roundoff<T>();
        const bool native =
            partials == precision::native_partials && c == collective::reduce_scatter;
        const long double bound = u * std::fabs(want) +
                                  (native ? u * (1 + u) * (1 + u) * partial : 0) +
                                  (e.A + 1) * acc * (1 + u) * (1 + u) * magnitude +
                                  (native ? 2 : 1) * detail::smallest_step<T>();
        const long double value = detail::as_number(got);
        ok = std::isfinite(static_cast<double>(value)) && std::fabs(value - want) <= bound;
        if (exact) ok = value == want;  // T holds no two encodings of one nonzero value
      }
      if (!ok && report.wrong++ == 0)
        report.first = e.where() + ": got " +
                       std::to_string(static_cast<double>(detail::as_number(got))) + ", want " +
                       std::to_string(static_cast<double>(want));
    });
  });
  return report;
}

}  // namespace relay::reference
