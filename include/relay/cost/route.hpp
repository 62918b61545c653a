// Which route to take for one call: the one the alpha-beta model predicts faster.
//
//   relay::schedule_spec s{relay::collective::allreduce, 2, 8, relay::mode::fused};
//   relay::route r = relay::choose_route(s, relay::mi300x, count, 2);   // bf16
//
// Only relay and direct compete (legacy is a reference, never faster than relay). The
// prediction prices every step's latency and its busiest link, so small counts, where the relay
// route's extra step costs more than its bytes save, go direct, and large ones relay.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "relay/cost/link_cost.hpp"

namespace relay {

// Predicted seconds of `s`'s schedule for per-group count n, or +infinity when `s` names no
// schedule (spec_error says why).
constexpr double predicted_seconds(const schedule_spec& s, const topology& t, std::int64_t n,
                                   int element_size) {
  const std::optional<schedule> sched = build_schedule(s);
  if (!sched) return std::numeric_limits<double>::infinity();
  return alpha_beta_seconds(*sched, t, n, element_size);
}

// relay or direct, whichever `predicted_seconds` says is faster; direct on a tie (it is the
// simpler path). `s.route` is ignored; `s.permille` shapes the relay candidate.
constexpr route choose_route(schedule_spec s, const topology& t, std::int64_t n, int element_size) {
  schedule_spec relay_spec = s, direct_spec = s;
  relay_spec.route = route::relay;
  direct_spec.route = route::direct;
  direct_spec.permille = 0;
  return predicted_seconds(relay_spec, t, n, element_size) <
                 predicted_seconds(direct_spec, t, n, element_size)
             ? route::relay
             : route::direct;
}

}  // namespace relay
