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
constexpr std::array<std::int64_t, 8> representative_counts(const schedule_spec& s,
                                                            std::int64_t alignment) {
  const std::int64_t a = alignment, n = s.ranks;
  return {0, 1, a + 1, n * a - 1, n * a, n * a + 1, 3 * (n + s.active) * a + 5, 1000 * n * a + 17};
}

namespace detail {

// The checks run on the schedule's pattern, one group (schedule/schedule.hpp): every other group
// runs the same operations on its own ranks at its own count, and the memory model keeps groups
// apart, so a pattern that passes at a count passes as any group at that count beside any other
// groups at any counts. The run-time check of a whole plan (verify_at, on every group at once)
// confirms it in the unit tests.
//
// At each count the program runs out of place first, then in place (where the collective has
// it), and the first failure ends the check: so the in-place structure run may check only what
// the in-place layout changes (check_structure_of's `user_only`).
template <class Check>
constexpr check_failure at_representative_counts(const schedule_view& s, std::int64_t alignment,
                                                 Check check) {
  flat_stack<concrete_op> ops;  // one program at a time, in lists kept across counts
  flat_stack<concrete_operand> sources;
  for (const std::int64_t n : representative_counts(s.spec(), alignment)) {
    const std::span<const std::int64_t> counts(&n, 1);
    ops.clear();
    sources.clear();
    evaluate_into(s, counts, alignment, ops, sources);
    const concrete_view program{{ops.data(), ops.size()}, {sources.data(), sources.size()}};
    for (bool in_place : {false, true}) {
      if (in_place && !has_in_place(s.spec().coll)) continue;
      if (const check_failure f = check(*s.header, program, counts, in_place, alignment); !f.ok())
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
      s, alignment,
      [](const schedule_header& h, const concrete_view& p, std::span<const std::int64_t> counts,
         bool in_place, std::int64_t a) {
        return detail::check_structure_of(h, p, counts, in_place, a, in_place);
      });
}

namespace detail {
// Both checks on one evaluated program: structure first (the dataflow check relies on it);
// `user_only` as in check_structure_of.
constexpr check_failure check_both_of(const schedule_header& h, const concrete_view& p,
                                      std::span<const std::int64_t> counts, bool in_place,
                                      std::int64_t alignment, bool user_only) {
  const check_failure f = check_structure_of(h, p, counts, in_place, alignment, user_only);
  return f.ok() ? check_dataflow_of(h, p, counts, in_place, alignment) : f;
}
}  // namespace detail

// Both: what a schedule must satisfy before any executor may run it.
constexpr check_failure verify(const schedule_view& s, std::int64_t alignment = default_alignment) {
  return detail::at_representative_counts(
      s, alignment,
      [](const schedule_header& h, const concrete_view& p, std::span<const std::int64_t> counts,
         bool in_place,
         std::int64_t a) { return detail::check_both_of(h, p, counts, in_place, a, in_place); });
}

// Both on every group at once, group g at `counts[g]`, out of place or in place: the whole
// program a plan runs, where verify checks the pattern (the unit tests compare the two).
constexpr check_failure verify_at(const schedule_view& s, std::span<const std::int64_t> counts,
                                  bool in_place, std::int64_t alignment = default_alignment) {
  return detail::check_both_of(*s.header, evaluate(s, counts, alignment).view(), counts, in_place,
                               alignment, false);
}

}  // namespace relay
