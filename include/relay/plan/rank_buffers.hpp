// One rank's buffers against a plan, checked by that rank alone (the rank-local path, where
// each process holds only its own buffers): where they sit relative to each other (in place or
// not, NCCL's convention) and whether they are usable.
#pragma once

#include <span>
#include <vector>

#include "relay/plan/buffers.hpp"

namespace relay {

// Where this rank's buffers sit relative to each other (detected from its pointers as NCCL
// does). Helpers have no buffers, and neither has a rank whose count is 0. In-place must agree
// across the other active ranks of a call.
enum class placement : unsigned char { helper, out_of_place, in_place };

// Helper when `rank` is active in no group, or its group's count is 0 (its buffers hold nothing,
// so where they sit says nothing); in place when recv sits where NCCL's in-place form
// of the collective puts it relative to send; out of place otherwise.
inline placement placement_of(collective c, const std::vector<std::vector<int>>& groups,
                              std::span<const std::int64_t> counts, int element_size, int rank,
                              buffer_view send, buffer_view recv) {
  for (std::size_t g = 0; g < groups.size() && g < counts.size(); ++g)
    for (std::size_t k = 0; k < groups[g].size(); ++k) {
      if (groups[g][k] != rank) continue;
      if (counts[g] == 0) return placement::helper;  // no buffers to speak of: no vote
      if (!has_in_place(c)) return placement::out_of_place;
      std::int64_t delta = 0;  // a count make_plan refuses: out of place, and refused there
      return detail::in_place_delta(c, static_cast<int>(k), counts[g], element_size, delta) &&
                     detail::distance(send, recv) == delta
                 ? placement::in_place
                 : placement::out_of_place;
    }
  return placement::helper;
}

// validate_buffers for this rank's buffers only: the same checks and messages.
inline status validate_rank_buffers(const plan& p, int rank, buffer_view send, buffer_view recv,
                                    placement where) {
  plan mine;
  mine.spec = p.spec;
  mine.type = p.type;
  mine.in_place = where == placement::in_place;
  mine.groups = p.groups;
  mine.counts = p.counts;
  const auto R = static_cast<std::size_t>(p.ranks());
  const auto r = static_cast<std::size_t>(rank);
  mine.input_bytes.assign(R, 0);
  mine.output_bytes.assign(R, 0);
  mine.input_bytes[r] = p.input_bytes[r];
  mine.output_bytes[r] = p.output_bytes[r];
  std::vector<buffer_view> inputs(R), outputs(R);
  inputs[r] = send;
  outputs[r] = recv;
  return validate_buffers(mine, inputs, outputs);
}

}  // namespace relay
