// The link cost model: bytes on every (link, direction) per step, the beta cost (max per step,
// summed over the serialized steps), the alpha-beta time, and the ceiling against the
// pure-direct baseline.
//
// Loads are shares of n (the per-group count, equal across groups), so a cost in these units is
// multiplied by n * element_size / link_bandwidth to give seconds. Only transfers between
// distinct ranks load links; local copies and reductions are priced at zero, as in the spec.
#pragma once

#include <limits>
#include <vector>

#include "relay/core/config.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/generate.hpp"
#include "relay/topology/topology.hpp"

namespace relay {

// The cost of a step that sends traffic over a pair with no link (a matrix topology).
inline constexpr ratio unroutable_cost{std::numeric_limits<std::int32_t>::max()};

// Share of n that `from` sends to `to` in `step` (steps count from 1).
constexpr ratio link_load(const schedule_view& s, int step, int from, int to) {
  const symbol_shares v = ideal_shares(*s.header);
  ratio load{};
  for (const operation& op : s.ops) {
    if (op.step != step || op.phase != phase::transfer || op.dst.rank != to) continue;
    if (s.sources_of(op)[0].rank == from && from != to) load += op.length.share(v);
  }
  return load;
}

// loads[from * ranks + to] for one step, or summed over every step when `step` is 0: the per-link
// byte matrix in shares of n.
constexpr std::vector<ratio> link_loads(const schedule_view& s, int step = 0) {
  const int R = s.spec().ranks;
  const symbol_shares v = ideal_shares(*s.header);
  std::vector<ratio> loads(static_cast<std::size_t>(R * R));
  for (const operation& op : s.ops) {
    if (op.phase != phase::transfer || (step != 0 && op.step != step)) continue;
    const int from = s.sources_of(op)[0].rank, to = op.dst.rank;
    if (from != to) loads[static_cast<std::size_t>(from * R + to)] += op.length.share(v);
  }
  return loads;
}

// The beta cost of one step on `t`, in units of n * element_size / t.link_bandwidth.
constexpr ratio step_beta(const schedule_view& s, const topology& t, int step) {
  const int R = s.spec().ranks;
  const std::vector<ratio> loads = link_loads(s, step);
  ratio worst{};
  for (int a = 0; a < R; ++a) {
    ratio egress{}, ingress{};
    for (int b = 0; b < R; ++b) {
      const ratio load = loads[static_cast<std::size_t>(a * R + b)];
      egress += load;
      ingress += loads[static_cast<std::size_t>(b * R + a)];
      if (t.kind == fabric::switched || load == ratio{}) continue;
      const int links = t.link_count(a, b);
      if (links == 0) return unroutable_cost;
      worst = max(worst, load / ratio{links});
    }
    if (t.kind == fabric::switched) worst = max(worst, max(egress, ingress));
  }
  return worst;
}

// Sum of step_beta over the schedule's steps (unroutable_cost if any step is).
constexpr ratio beta_cost(const schedule_view& s, const topology& t) {
  ratio total{};
  for (int step = 1; step <= s.header->steps; ++step) {
    const ratio b = step_beta(s, t, step);
    if (b == unroutable_cost) return b;
    total += b;
  }
  return total;
}

// The most operations (copies it sends, local copies, reductions) one rank issues in `step`.
constexpr int max_ops_per_rank(const schedule_view& s, int step) {
  std::vector<int> per_rank(static_cast<std::size_t>(s.spec().ranks), 0);
  int most = 0;
  for (const operation& op : s.ops) {
    if (op.step != step) continue;
    const int rank = op.phase == phase::transfer ? s.sources_of(op)[0].rank : op.dst.rank;
    most = std::max(most, ++per_rank[static_cast<std::size_t>(rank)]);
  }
  return most;
}

// Predicted seconds for per-group count n of `element_size`-byte elements: per step, the step
// latency, the per-operation latency of the busiest rank, and the busiest link's bytes.
constexpr double alpha_beta_seconds(const schedule_view& s, const topology& t, std::int64_t n,
                                    int element_size) {
  double seconds = 0;
  const double bytes = static_cast<double>(n) * element_size;
  for (int step = 1; step <= s.header->steps; ++step)
    seconds += t.step_latency + t.op_latency * max_ops_per_rank(s, step) +
               step_beta(s, t, step).to_double() * bytes / t.link_bandwidth;
  return seconds;
}

// The pure-direct baseline of the same collective, A, N and mode.
RELAY_CONSTEXPR_SCHEDULE schedule direct_counterpart(const schedule_view& s) {
  schedule_spec d = s.spec();
  d.route = route::direct;
  d.permille = 0;
  d.tiles = 0;
  return *build_schedule(d);
}

// How many times faster than the pure-direct baseline the link model says `s` can be.
RELAY_CONSTEXPR_SCHEDULE ratio ceiling(const schedule_view& s, const topology& t) {
  return beta_cost(direct_counterpart(s), t) / beta_cost(s, t);
}

}  // namespace relay
