// Every property of a schedule at once, at representative counts, in place and out of place.
//
//   static_assert(relay::verify(relay::schedule_v<relay::collective::allreduce, 2, 8>).ok());
#pragma once

#include <array>

#include "relay/check/dataflow.hpp"
#include "relay/check/hazards.hpp"

namespace relay {

// Counts that exercise every branch of the chunking rules: empty, one element, just past one
// alignment unit (the zero-chunk direct fallback), around one aligned chunk per rank (the first
// relayed counts), an odd mid-size count and a large one where every offload fraction relays.
// In a fused schedule the counts rotate across groups, so neighbours differ (heterogeneous).
constexpr std::array<std::int64_t, 8> representative_counts(const schedule_spec& s,
                                                            std::int64_t alignment) {
  const std::int64_t a = alignment, n = s.ranks;
  return {0, 1, a + 1, n * a - 1, n * a, n * a + 1, 3 * (n + s.active) * a + 5, 1000 * n * a + 17};
}

namespace detail {

template <class Check>
constexpr check_failure at_representative_counts(const schedule_view& s, std::int64_t alignment,
                                                 Check check) {
  const auto counts = representative_counts(s.spec(), alignment);
  const auto groups = static_cast<std::size_t>(s.spec().groups());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    std::array<std::int64_t, max_ranks> per_group{};
    for (std::size_t g = 0; g < groups; ++g)
      per_group[g] = counts[(i + g) % counts.size()];
    const std::span<const std::int64_t> view(per_group.data(), groups);
    const concrete_program program = evaluate(s, view, alignment);
    for (bool in_place : {false, true}) {
      if (in_place && !has_in_place(s.spec().coll)) continue;
      if (const check_failure f = check(*s.header, program, view, in_place, alignment); !f.ok())
        return f;
    }
  }
  return {};
}

}  // namespace detail

// The dataflow property (check/dataflow.hpp) at every representative count.
constexpr check_failure check_dataflow(const schedule_view& s,
                                       std::int64_t alignment = default_alignment) {
  return detail::at_representative_counts(
      s, alignment, [](const auto&... a) { return detail::check_dataflow_of(a...); });
}

// The structural properties (check/hazards.hpp) at every representative count.
constexpr check_failure check_structure(const schedule_view& s,
                                        std::int64_t alignment = default_alignment) {
  return detail::at_representative_counts(
      s, alignment, [](const auto&... a) { return detail::check_structure_of(a...); });
}

// Both: what a schedule must satisfy before any executor may run it.
constexpr check_failure verify(const schedule_view& s, std::int64_t alignment = default_alignment) {
  return detail::at_representative_counts(s, alignment, [](const auto&... a) {
    check_failure f = detail::check_structure_of(a...);
    return f.ok() ? detail::check_dataflow_of(a...) : f;
  });
}

}  // namespace relay
