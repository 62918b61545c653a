// Choose: every choice the cost model makes for a call, in one place. Once per shape
// (plan/call_shape.hpp): the route route::automatic takes, with its offload share and pipeline
// depth, and whether the call goes on the fp8 wire; make_plan (plan/make_plan.hpp) then makes the
// plan of the shape as chosen, and make_plan(request, out) below does both, for callers that make
// a plan once. Once per plan, on a transport that launches plans in forms (the ipc transport): the
// form (cost/form.hpp), from what that transport's kernels can run the plan in.
#pragma once

#include <algorithm>
#include <cstdint>

#include "relay/cost/form.hpp"
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

// What a transport's kernels can run a plan in: the one-shot form (within its cap on tiles, and
// with the ends the plan needs), and the pull form (an allreduce it reads in place, within the
// same cap). The transport says; choose_form decides.
struct form_fit {
  bool one_shot = false;
  bool pull = false;  // implies one_shot: the pull is a one-shot form
  bool ll = false;    // implies pull: the ll form runs the pull form's calls up to its capacity
};

struct form_choice {
  bool ll = false;        // the ll kernel runs the call (a call of the pull form's rules)
  bool pull = false;      // the pull kernel runs the call, or (ll) the ll kernel
  bool one_shot = false;  // one launch (the ll's, the pull's, or the plan's one-shot kernel)
  friend constexpr bool operator==(const form_choice&, const form_choice&) = default;
};

// The form that runs plan `p` (call_form `asked`: ipc_options::form, RELAY_IPC_FORM). automatic,
// the model's choice:
//   - the pull form wherever it fits, on a direct route. It reads each member's input once, in
//     place, and writes each output once, in one launch with two round trips; the plan's forms of
//     the same route do that work and stage it besides (copies in and out, more launches or
//     barriers). Measured on one H200 under MPS, replayed (bench/results/2026-12-02-h200-ipc-pull,
//     2026-12-04-h200-eager-agreement): faster than both plan forms at every size to its cap,
//     1 to 32 MB with 2 processes and A=2 (32 MB: pull 68 us, stepped 199), 4 KB to 16 MB with
//     8 processes and A=4 (16 MB: 239 against 296). Priced as
//     launch + 2 signal + ceil(A * output tiles / G_p) * tile, with rounds of at most 64 blocks
//     priced as the stepped form's rounds of 528, it switched to the stepped form at 1-4 MB (A=4)
//     and 16-32 MB (A=2), where the pull was 1.2-2.9x faster: so it is not priced.
//   - the ll form in place of the pull form where it fits (an input of at most ll_capacity
//     bytes): the same sum in one device-side trip instead of two, and no staged input (each
//     member's input travels in words that carry their call). Not priced either: it does the
//     pull's work with fewer round trips at every size it takes.
//   - neither on a relay route: they would read from the group's members over their own links and
//     leave idle the helpers' links the route was chosen for (the plan's forms carry the route).
//   - otherwise the one-shot form where it fits and `prices` put it below the stepped one.
// one_shot, stepped, pull, ll: that form where it fits, on any route (ll falls back to the pull
// form where it does not fit, pull to the one-shot form, and all to the stepped form).
inline form_choice choose_form(call_form asked, const plan& p, const form_fit& fit,
                               const form_prices& prices) {
  form_choice c;
  switch (asked) {
    case call_form::automatic:
      c.pull = fit.pull && p.spec.route == route::direct;
      c.ll = c.pull && fit.ll;
      c.one_shot = c.pull || (fit.one_shot && prices.one_shot_wins());
      break;
    case call_form::ll:
      c.ll = fit.ll;
      c.pull = fit.pull;
      c.one_shot = fit.one_shot;
      break;
    case call_form::pull:
      c.pull = fit.pull;
      c.one_shot = fit.one_shot;
      break;
    case call_form::one_shot: c.one_shot = fit.one_shot; break;
    case call_form::stepped: break;
  }
  return c;
}

// Chooses, then makes: the plan of `r` as the cost model chooses it on r.machine, or the first
// problem (with `out` as it was).
inline status make_plan(const plan_request& r, plan& out) {
  return make_plan(r, choose(r), out);
}

}  // namespace relay
