// Scratch sizes, as public functions a communication library can size its buffers with before
// it builds a plan. All in elements, for per-group count n.
#pragma once

#include <algorithm>
#include <cstdint>

#include "relay/core/config.hpp"
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

}  // namespace relay
