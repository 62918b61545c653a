// What one rank's buffers hold in a call, and the count a pair of buffers stands for: the sizing
// rule of core/collective.hpp (input_elements, output_elements, in_place_layout) applied to one
// rank of a call, and read backwards. Bindings (the C ABI, relay.torch) size and check their
// callers' buffers with these; C++ callers may too.
//
//   relay::rank_layout l;
//   relay::status s = relay::rank_layout_of(
//       relay::call_request(relay::collective::all_gather, groups, N, counts, t, op, {}), rank, l);
#pragma once

#include <cstdint>
#include <string>

#include "relay/core/collective.hpp"
#include "relay/core/status.hpp"
#include "relay/plan/call_shape.hpp"
#include "relay/plan/validate.hpp"

namespace relay {

// One rank's part of a call. Element counts and offsets are in elements.
struct rank_layout {
  int group = -1;         // the group the rank is active in; -1: it helps
  int active_index = -1;  // its index there; -1: it helps
  int active = 0;         // A, the active ranks per group
  std::int64_t input_elements = 0, output_elements = 0;  // 0 on a helper
  // In place (where the collective has it): the input lies at output + in_place_input_offset
  // (all-gather), the output at input + in_place_output_offset (reduce-scatter); allreduce has
  // both 0.
  std::int64_t in_place_input_offset = 0, in_place_output_offset = 0;
  bool has_in_place = false;
  friend bool operator==(const rank_layout&, const rank_layout&) = default;
};

// Rank `rank`'s layout in a call of shape `s`, after the checks the call itself makes of the
// shape (validate_shape) on the direct route: that route exists for every group shape the others
// do, and the sizes do not depend on the route, so a route's own limits (the relay route needs a
// helper, A < N) stay the call's to report. Allocates nothing.
inline status rank_layout_of(const call_shape& s, int rank, rank_layout& out) {
  if (rank < 0 || rank >= s.ranks)
    return {errc::invalid_argument,
            "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(s.ranks - 1)};
  if (status v = validate_shape(s, call_choice{route::direct, 0, 0, {}}); !v) return v;
  rank_layout l;
  l.active = static_cast<int>(s.groups.front().size());
  l.has_in_place = has_in_place(s.coll);
  for (std::size_t g = 0; g < s.groups.size(); ++g)
    for (std::size_t k = 0; k < s.groups[g].size(); ++k)
      if (s.groups[g][k] == rank) {
        const std::int64_t n = s.counts[g];
        l.group = static_cast<int>(g);
        l.active_index = static_cast<int>(k);
        l.input_elements = input_elements(s.coll, l.active, n);
        l.output_elements = output_elements(s.coll, l.active, n);
        const in_place_offsets at = in_place_layout(s.coll, l.active_index, n);
        l.in_place_input_offset = at.input;
        l.in_place_output_offset = at.output;
      }
  out = l;
  return {};
}

// The per-group count of a call of `c` among `active` ranks per group whose active rank holds
// `input` and `output` elements: input_elements and output_elements read backwards (each grows
// by a fixed number of elements per unit of count), and checked forwards, so a pair that fits no
// count is refused (errc::invalid_count, naming the sizes a count would give).
inline status count_of(collective c, int active, std::int64_t input, std::int64_t output,
                       std::int64_t& count) {
  if (active < 1)
    return {errc::invalid_group, "a group of " + std::to_string(active) + " active ranks"};
  if (input < 0 || output < 0) return {errc::invalid_count, "element counts cannot be negative"};
  const std::int64_t n = input / input_elements(c, active, 1);
  if (input_elements(c, active, n) != input || output_elements(c, active, n) != output)
    return {errc::invalid_count,
            std::string(name(c)) + " among " + std::to_string(active) +
                " active ranks takes an input of " + std::to_string(input_elements(c, active, n)) +
                " and an output of " + std::to_string(output_elements(c, active, n)) +
                " elements for count " + std::to_string(n) + ", not " + std::to_string(input) +
                " and " + std::to_string(output)};
  count = n;
  return {};
}

}  // namespace relay
