// The data a benchmark run moves, and the check of every element it produced.
//
// Rank r's input element i is a small integer drawn from (seed, r, i): -4..4 for signed and
// floating types, 0..7 for unsigned ones. Every dtype holds such values exactly, and so every
// sum of up to 16 of them and every average by a power of two A: the right output is one exact
// value whatever order a schedule reduces in, and the check compares exactly. Outputs are
// poisoned (bytes 0x7F: a value no right output holds, NaN for float16) before a checked run, so
// an element nothing wrote is counted wrong too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/fp8.hpp"
#include "relay/core/wire.hpp"

namespace relay::bench {

// The value of rank `rank`'s input element `index`.
std::int64_t input_value(dtype type, std::uint64_t seed, int rank, std::int64_t index);

// Writes `elements` input elements of `rank` to `dst` (host memory), on every core.
void fill_input(dtype type, std::uint64_t seed, int rank, std::int64_t elements, std::byte* dst);

inline constexpr unsigned char poison_byte = 0x7F;
void poison(std::byte* dst, std::size_t bytes);

struct check_result {
  std::int64_t wrong = 0;
  std::string first;  // where the first wrong element is, and what it holds
  // check_output_fp8: the largest |r - S| / |S| over the outputs whose exact value S is not 0.
  double max_relative_error = 0;
};

// Checks the output of the active rank with index k in `ranks` (the group, in active order) for
// per-group count n: output_elements(c, A, n) elements at `out` (host memory), on every core.
check_result check_output(collective c, dtype type, reduce_op op, std::span<const int> ranks, int k,
                          std::int64_t n, std::uint64_t seed, const std::byte* out);

// The same for a call on an fp8 wire of format `f`, each value quantized on at most `hops` hops
// (relay::reference::wire_hops): an element is wrong outside the documented fp8 bound
// (relay::reference::fp8_bound, with every input's magnitude at most 4), and the largest
// relative error is measured. Floating dtypes only.
check_result check_output_fp8(collective c, dtype type, reduce_op op, std::span<const int> ranks,
                              int k, std::int64_t n, std::uint64_t seed, const std::byte* out,
                              fp8_format f, int hops);

// The output of a call that ran on `wire` (the plan's wire.taken, which route `r` and `active`
// ranks per group give their hops): check_output natively, else check_output_fp8.
check_result check_output_on(wire_format wire, route r, collective c, dtype type, reduce_op op,
                             std::span<const int> ranks, int k, std::int64_t n, std::uint64_t seed,
                             const std::byte* out);

}  // namespace relay::bench
