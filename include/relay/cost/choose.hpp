// Choose: what the cost model decides for a call, once per shape (plan/call_shape.hpp): the route
// route::automatic takes, with its offload share and pipeline depth, and whether the call goes
// on the fp8 wire. make_plan (plan/make_plan.hpp) then makes the plan of the shape as chosen;
// make_plan(request, out) below does both, for callers that make a plan once.
#pragma once

#include <algorithm>
#include <cstdint>

#include "relay/cost/route.hpp"
#include "relay/cost/wire.hpp"
#include "relay/plan/call_shape.hpp"
#include "relay/plan/make_plan.hpp"
#include "relay/plan/validate.hpp"
#include "relay/topology/topology.hpp"

namespace relay {

namespace detail {

inline std::int64_t largest_count(const call_shape& r) {
  std::int64_t n = 0;
  for (const std::int64_t count : r.counts)
    n = std::max(n, count);
  return n;
}

}  // namespace detail

// The schedule `r` takes on `machine`. For route::automatic, the spec choose_schedule predicts
// fastest at the largest of the counts (the group that finishes last), with r's element and
// partial-sum widths: direct or relay (relay with r.permille, for an allreduce), and for a single
// group also the pipelined route at its best depth; A = N is direct, the only route there. A
// request the relay route refuses (A not a power of two, a permille outside an allreduce, ...)
// keeps route relay, so make_plan names the problem. Any other route: as asked.
inline call_choice choose_route(const call_shape& r, const topology& machine) {
  call_choice c{r.route, r.permille, r.tiles, {}};
  if (r.route != route::automatic || r.groups.empty()) return c;
  const int A = static_cast<int>(r.groups.front().size());
  c.tiles = 0;
  if (A == r.ranks) {
    c.route = route::direct;
    return c;
  }
  c.route = route::relay;
  const schedule_spec relay_spec{r.coll, A, r.ranks, r.mode, route::relay, r.permille, 0};
  const bool known_widths =
      static_cast<unsigned>(r.type) < all_dtypes.size() &&
      (r.precision == precision::fp32_partials || r.precision == precision::native_partials);
  if (spec_error(relay_spec) != nullptr || !known_widths) return c;
  const schedule_spec best = choose_schedule(relay_spec, machine, detail::largest_count(r),
                                             size_of(r.type), widths_of(r.type, r.precision));
  c.route = best.route;
  c.permille = best.permille;
  c.tiles = best.tiles;
  return c;
}

// The wire `r` takes on `spec` (its schedule as chosen): what was asked, made concrete
// (wire_format::fp8 is the machine's encoding), where the largest group reaches the threshold.
inline wire_choice choose_wire(const call_shape& r, const schedule_spec& spec,
                               const topology& machine) {
  wire_choice w;
  if (r.wire == wire_format::native) return w;
  w.requested = r.wire == wire_format::fp8 ? wire_of(machine.fp8) : r.wire;
  w.bytes = static_cast<std::uint64_t>(detail::largest_count(r)) *
            static_cast<std::uint64_t>(size_of(r.type));
  w.threshold_bytes = r.wire_threshold >= 0
                          ? static_cast<std::uint64_t>(r.wire_threshold)
                          : fp8_threshold_bytes(spec, machine, r.type, r.precision);
  w.taken = w.bytes >= w.threshold_bytes ? w.requested : wire_format::native;
  return w;
}

// The route and the wire of `r`, priced on r.machine (mi300x where null). The wire is priced
// only for a shape that can be made; make_plan refuses any other with its reason.
inline call_choice choose(const plan_request& r) {
  const topology& machine = r.machine ? *r.machine : mi300x;
  call_choice c = choose_route(r, machine);
  if (!validate_shape(r, c)) return c;
  const schedule_spec spec{
      r.coll, static_cast<int>(r.groups.front().size()), r.ranks, r.mode, c.route, c.permille,
      c.tiles};
  c.wire = choose_wire(r, spec, machine);
  return c;
}

// Chooses, then makes: the plan of `r` as the cost model chooses it on r.machine, or the first
// problem (with `out` as it was).
inline status make_plan(const plan_request& r, plan& out) {
  return make_plan(r, choose(r), out);
}

}  // namespace relay
