// nccl-tests' conventions, so relay-bench's numbers read like the tables people already know.
//
//   size   the larger of one active rank's input and output, in bytes: the input for allreduce,
//          reduce-scatter and all-to-all (A*n elements for the last two), the output for
//          all-gather (A*n elements)
//   count  size / element size
//   algbw  size / time
//   busbw  algbw * 2(A-1)/A for allreduce, algbw * (A-1)/A for the other three, with A the
//          number of ranks that take part in one collective (the active count)
//
// relay's own count n (core/collective.hpp) is what each group is sized by: count for allreduce,
// recvCount, sendCount and segmentCount for the others; so n = count for allreduce and count / A
// for the rest, rounded down as nccl-tests rounds its per-rank counts down.
#pragma once

#include <algorithm>
#include <cstdint>

#include "relay/core/collective.hpp"

namespace relay::bench {

// The per-group count n for a requested size in bytes.
constexpr std::int64_t group_count(collective c, int active, std::int64_t bytes, int element_size) {
  const std::int64_t elements = bytes / element_size;
  return c == collective::allreduce ? elements : elements / active;
}

// The size column for a per-group count n: the larger buffer of one active rank, in bytes.
constexpr std::int64_t call_bytes(collective c, int active, std::int64_t n, int element_size) {
  return std::max(input_elements(c, active, n), output_elements(c, active, n)) * element_size;
}

constexpr double bus_factor(collective c, int active) {
  const double a = active;
  return c == collective::allreduce ? 2 * (a - 1) / a : (a - 1) / a;
}

// GB/s (10^9 bytes), as nccl-tests prints them.
constexpr double algbw_gbps(std::int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}
constexpr double busbw_gbps(collective c, int active, std::int64_t bytes, double seconds) {
  return algbw_gbps(bytes, seconds) * bus_factor(c, active);
}

}  // namespace relay::bench
