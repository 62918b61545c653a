// Scratch sizes, as public functions a communication library can size its buffers with before
// it builds a plan, for per-group count n. The *_elements functions count elements of the
// scratch space and of the partial-sum space separately (a partial element is
// partial_size(dtype, precision) bytes wide: 4 for fp16/bf16 by default); the *_bytes functions
// give the bytes make_plan reserves for one group on one rank, both areas included.
#pragma once

#include <algorithm>
#include <cstdint>

#include "relay/core/config.hpp"
#include "relay/core/dtype.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/generate.hpp"

namespace relay {

// The spec's two-slot "passthrough" helper size for A active ranks and numChunks chunks:
//   min(n, A * align_down(n / numChunks, alignment)).
// (The spec's A=2 schedules use numChunks = H+1 (old) and H+2 (new); relay's own helper sizes
// are below.) 0 when numChunks or alignment is not positive.
constexpr std::int64_t passthrough_helper_elements(std::int64_t n, int active, int num_chunks,
                                                   std::int64_t alignment = default_alignment) {
  if (num_chunks <= 0 || alignment <= 0 || n <= 0) return 0;
  const std::int64_t chunk = n / num_chunks / alignment * alignment;
  return std::min(n, active * chunk);
}

// Scratch one helper rank needs for one group of count n under relay's schedule for `s`
// (allreduce: A offload pieces; reduce-scatter: A*(A-1) slices; all-gather: A slices;
// all-to-all: A*(A-1) pieces; direct: none). -1 when s has no schedule (spec_error says why).
RELAY_CONSTEXPR_SCHEDULE std::int64_t helper_scratch_elements(
    const schedule_spec& s, std::int64_t n, std::int64_t alignment = default_alignment) {
  const auto sched = build_schedule(s);
  return sched ? scratch_elements(sched->header, false, n, alignment) : -1;
}

// Scratch one active rank needs for its own group of count n (the direct regions it receives
// before reducing them); -1 when s has no schedule.
RELAY_CONSTEXPR_SCHEDULE std::int64_t active_scratch_elements(
    const schedule_spec& s, std::int64_t n, std::int64_t alignment = default_alignment) {
  const auto sched = build_schedule(s);
  return sched ? scratch_elements(sched->header, true, n, alignment) : -1;
}

// Partial-sum elements (buffer::partial) one rank needs for one group, as an active rank or a
// helper: A sums of A-1 slices on a reduce-scatter helper and the H returned sums on their owner
// (relay route, A >= 4); 0 elsewhere. -1 when s has no schedule.
RELAY_CONSTEXPR_SCHEDULE std::int64_t partial_sum_elements(
    const schedule_spec& s, bool active, std::int64_t n,
    std::int64_t alignment = default_alignment) {
  const auto sched = build_schedule(s);
  return sched ? partial_elements(sched->header, active, n, alignment) : -1;
}

namespace detail {
RELAY_CONSTEXPR_SCHEDULE std::int64_t scratch_bytes(const schedule_spec& s, bool active,
                                                    std::int64_t n, dtype t, precision p,
                                                    std::int64_t alignment) {
  const auto sched = build_schedule(s);
  if (!sched) return -1;
  // As make_plan lays them out: each area rounded up to 256 bytes (scratch_area_alignment).
  auto rounded = [](std::int64_t b) { return (b + 255) / 256 * 256; };
  return rounded(scratch_elements(sched->header, active, n, alignment) * size_of(t)) +
         rounded(partial_elements(sched->header, active, n, alignment) * partial_size(t, p));
}
}  // namespace detail

// Bytes of scratch one helper rank needs for one group of count n of `t` elements, partial sums
// stored as `p` says: what make_plan adds to the rank's plan::scratch_bytes. -1 when s has no
// schedule.
RELAY_CONSTEXPR_SCHEDULE std::int64_t helper_scratch_bytes(
    const schedule_spec& s, std::int64_t n, dtype t, precision p = precision::fp32_partials,
    std::int64_t alignment = default_alignment) {
  return detail::scratch_bytes(s, false, n, t, p, alignment);
}

// The same for an active rank and its own group.
RELAY_CONSTEXPR_SCHEDULE std::int64_t active_scratch_bytes(
    const schedule_spec& s, std::int64_t n, dtype t, precision p = precision::fp32_partials,
    std::int64_t alignment = default_alignment) {
  return detail::scratch_bytes(s, true, n, t, p, alignment);
}

}  // namespace relay
