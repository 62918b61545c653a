// One rank's buffers against a plan, checked by that rank alone (the rank-local path, where
// each process holds only its own buffers): where they sit relative to each other (in place or
// not, NCCL's convention) and whether they are usable.
#pragma once

#include <cstdint>
#include <span>
#include <string>
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

// validate_buffers for this rank's buffers only: the same checks and messages, for a plan in
// which every other rank's buffers are empty. Nothing is allocated unless a check fails: the
// communicator runs it on every call (its repeated-call path allocates nothing).
inline status validate_rank_buffers(const plan& p, int rank, buffer_view send, buffer_view recv,
                                    placement where) {
  const auto r = static_cast<std::size_t>(rank);
  const std::uint64_t in_bytes = p.input_bytes[r], out_bytes = p.output_bytes[r];
  if (status s = detail::check_buffer("the input", r, send, in_bytes, p.element_size()); !s)
    return s;
  if (status s = detail::check_buffer("the output", r, recv, out_bytes, p.element_size()); !s)
    return s;
  const bool in_place = where == placement::in_place;
  if (in_place && out_bytes > 0)
    for (std::size_t g = 0; g < p.groups.size(); ++g)
      for (std::size_t k = 0; k < p.groups[g].size(); ++k) {
        std::int64_t delta = 0;
        if (p.groups[g][k] != rank || !detail::in_place_delta(p.spec.coll, static_cast<int>(k),
                                                              p.counts[g], p.element_size(), delta))
          continue;
        if (status s = detail::check_in_place(r, delta, send, recv); !s) return s;
      }
  const bool overlapping = detail::overlap(recv, out_bytes, send, in_bytes);
  if (p.spec.coll == collective::all_to_all && overlapping)
    return {errc::unsupported, "all-to-all has no in-place form: the output of rank " +
                                   std::to_string(rank) + " overlaps its input"};
  if (!in_place && overlapping)
    return {errc::invalid_buffer, "the output of rank " + std::to_string(rank) +
                                      " overlaps the input of rank " + std::to_string(rank) +
                                      " (out of place; pass the in-place layout for in place)"};
  return {};
}

}  // namespace relay
