// Which route to take for one call: the one the alpha-beta model predicts faster.
//
//   relay::schedule_spec s{relay::collective::allreduce, 2, 8, relay::mode::fused};
//   relay::route r = relay::choose_route(s, relay::mi300x, count, 2);   // bf16
//
// Only relay and direct compete (legacy is a reference, never faster than relay). The
// prediction prices every step's latency and its busiest link, so small counts, where the relay
// route's extra step costs more than its bytes save, go direct, and large ones relay.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>

#include "relay/cost/link_cost.hpp"

namespace relay {

// Predicted seconds of `s`'s schedule for per-group count n, or +infinity when `s` names no
// schedule (spec_error says why).
// `w` prices partial sums (element_widths: widths_of(dtype, precision)); the default prices them
// as elements.
RELAY_CONSTEXPR_SCHEDULE double predicted_seconds(const schedule_spec& s, const topology& t,
                                                  std::int64_t n, int element_size,
                                                  const element_widths& w = {}) {
  const std::optional<schedule> sched = build_schedule(s);
  if (!sched) return std::numeric_limits<double>::infinity();
  return alpha_beta_seconds(*sched, t, n, element_size, w);
}

// relay or direct, whichever `predicted_seconds` says is faster; direct on a tie (it is the
// simpler path). `s.route` and `s.tiles` are ignored; `s.permille` shapes the relay candidate.
RELAY_CONSTEXPR_SCHEDULE route choose_route(schedule_spec s, const topology& t, std::int64_t n,
                                            int element_size, const element_widths& w = {}) {
  schedule_spec relay_spec = s, direct_spec = s;
  relay_spec.route = route::relay;
  relay_spec.tiles = 0;  // a pipelined spec's depth is no relay's
  direct_spec.route = route::direct;
  direct_spec.permille = 0;
  direct_spec.tiles = 0;
  return predicted_seconds(relay_spec, t, n, element_size, w) <
                 predicted_seconds(direct_spec, t, n, element_size, w)
             ? route::relay
             : route::direct;
}

// The pipeline depths choose_schedule considers for a single group.
inline constexpr std::array<int, 5> pipeline_depths{2, 4, 8, 16, 32};

// The spec the model predicts fastest for `s`'s collective, A, N and mode: direct, relay, and,
// for a single group (any A < N), the pipelined route at each of pipeline_depths (each tile adds
// a step, so deeper pipelines pay only for larger messages). Ties keep the earlier candidate in
// that order. `s.route` and `s.tiles` are ignored; `s.permille` shapes the relay candidate.
RELAY_CONSTEXPR_SCHEDULE schedule_spec choose_schedule(schedule_spec s, const topology& t,
                                                       std::int64_t n, int element_size,
                                                       const element_widths& w = {}) {
  schedule_spec best = s;
  best.route = choose_route(s, t, n, element_size, w);
  best.tiles = 0;
  if (best.route == route::direct) best.permille = 0;
  double best_seconds = predicted_seconds(best, t, n, element_size, w);
  if (s.mode != mode::single) return best;
  for (int depth : pipeline_depths) {
    schedule_spec p = s;
    p.route = route::pipelined;
    p.permille = 0;
    p.tiles = depth;
    const double seconds = predicted_seconds(p, t, n, element_size, w);
    if (seconds < best_seconds) best = p, best_seconds = seconds;
  }
  return best;
}

}  // namespace relay
