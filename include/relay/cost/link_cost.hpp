// The link cost model: bytes on every (link, direction) per step, the beta cost (max per step,
// summed over the serialized steps), the alpha-beta time, and the ceiling against the
// pure-direct baseline.
//
// Loads are shares of n (the per-group count, equal across groups), so a cost in these units is
// multiplied by n * element_size / link_bandwidth to give seconds. Only transfers between
// distinct ranks load links; the beta cost, like the spec, prices local copies and reductions at
// zero. alpha_beta_seconds adds what they cost in time: each step's bytes read and written on
// each device's memory (memory_loads), the ranks that share a device adding up.
//
// Widths: a transfer of partial sums (buffer::partial) moves accumulator-wide elements, so it
// loads its link with length * partial_weight, partial_weight = partial_size / element size (2
// for fp16/bf16 with fp32 partials, 1 otherwise). Every function takes an `element_widths`; the
// calls without one (and without a dtype) price every element at the element's own width, which
// is the exact byte count for every dtype whose partials are as wide as its elements (fp32,
// fp64, the integers, or precision::native_partials) and the spec's own pricing.
#pragma once

#include <limits>
#include <vector>

#include "relay/core/config.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/fp8_block.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/generate.hpp"
#include "relay/topology/topology.hpp"

namespace relay {

// What a transfer's element costs, in element widths.
struct element_widths {
  ratio partial{1};  // an element of a partial sum (buffer::partial)
  ratio element{1};  // an element (1, but on an fp8 wire)
  friend constexpr bool operator==(const element_widths&, const element_widths&) = default;
};

constexpr element_widths widths_of(dtype t, precision p = precision::fp32_partials) {
  return {ratio{partial_size(t, p), size_of(t)}};
}

// On an fp8 wire (core/wire.hpp) every element that crosses a link, partial sums included, is
// one byte plus its share of a 4-byte scale per fp8_block_elements (128): 33/32 bytes, whatever
// it was before. The cost of a schedule per element count rounds the scales up per transfer and
// pads the codes to a multiple of 4 (fp8_wire_bytes); in shares of n they are 1/32 of a byte an
// element exactly.
constexpr element_widths fp8_wire_widths(dtype t) {
  const ratio wire{fp8_block_elements + fp8_scale_bytes,
                   fp8_block_elements * std::int64_t{size_of(t)}};
  return {wire, wire};
}

namespace detail {
constexpr ratio transfer_load(const schedule_view& s, const operation& op, const symbol_shares& v,
                              const element_widths& w) {
  const ratio count = op.count.share(v);
  if (s.sources_of(op)[0].buf == buffer::partial) return count * w.partial;
  return w.element == ratio{1} ? count : count * w.element;  // no gcd where nothing changes
}

// Calls f(op, from, to) for every group's copy of every transfer of the pattern in `step` (every
// step when 0), `from` and `to` the canonical ranks that group gives the pattern's roles.
template <class F>
constexpr void for_each_transfer(const schedule_view& s, int step, F f) {
  for (int g = 0; g < s.groups(); ++g) {
    const group_layout L{g, s.spec().active, s.spec().ranks};
    for (const operation& op : s.ops)
      if (op.phase == phase::transfer && (step == 0 || op.step == step))
        f(op, L.rank_of(s.sources_of(op)[0].rank), L.rank_of(op.dst.rank));
  }
}
}  // namespace detail

// The cost of a step that sends traffic over a pair with no link (a matrix topology).
inline constexpr ratio unroutable_cost{std::numeric_limits<std::int32_t>::max()};

// Share of n that `from` sends to `to` in `step` (steps count from 1), every group counted.
constexpr ratio link_load(const schedule_view& s, int step, int from, int to,
                          const element_widths& w = {}) {
  const symbol_shares v = ideal_shares(*s.header);
  ratio load{};
  detail::for_each_transfer(s, step, [&](const operation& op, int a, int b) {
    if (a == from && b == to && a != b) load += detail::transfer_load(s, op, v, w);
  });
  return load;
}

// loads[from * ranks + to] for one step, or summed over every step when `step` is 0: the per-link
// byte matrix in shares of n.
constexpr std::vector<ratio> link_loads(const schedule_view& s, int step = 0,
                                        const element_widths& w = {}) {
  const int R = s.spec().ranks;
  const symbol_shares v = ideal_shares(*s.header);
  std::vector<ratio> loads(static_cast<std::size_t>(R * R));
  detail::for_each_transfer(s, step, [&](const operation& op, int from, int to) {
    if (from != to)
      loads[static_cast<std::size_t>(from * R + to)] += detail::transfer_load(s, op, v, w);
  });
  return loads;
}

namespace detail {
// The beta cost of one step's loads (link_loads) on `t`: the busiest link, or on a switch the
// busiest port in either direction.
constexpr ratio busiest_link(const std::vector<ratio>& loads, const topology& t, int R) {
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
}  // namespace detail

// The beta cost of one step on `t`, in units of n * element_size / t.link_bandwidth.
constexpr ratio step_beta(const schedule_view& s, const topology& t, int step,
                          const element_widths& w = {}) {
  return detail::busiest_link(link_loads(s, step, w), t, s.spec().ranks);
}

// Sum of step_beta over the schedule's steps (unroutable_cost if any step is).
constexpr ratio beta_cost(const schedule_view& s, const topology& t, const element_widths& w = {}) {
  ratio total{};
  for (int step = 1; step <= s.header->steps; ++step) {
    const ratio b = step_beta(s, t, step, w);
    if (b == unroutable_cost) return b;
    total += b;
  }
  return total;
}

// The beta cost of `s` for elements of `type`, its partial sums stored as `p` says (still in
// units of n * size_of(type) / t.link_bandwidth):
//   static_assert(beta_cost(rs_4_8, mi300x, dtype::bfloat16) == ratio{5, 8});
constexpr ratio beta_cost(const schedule_view& s, const topology& t, dtype type,
                          precision p = precision::fp32_partials) {
  return beta_cost(s, t, widths_of(type, p));
}

// One step's traffic on the busiest device memory, in shares of n element widths (bytes read plus
// bytes written): `copies` of its transfer phase (a copy reads on its source's device and writes
// on its destination's, a copy within one rank both on its device) and `reductions` of its
// reduce phase (every operand read, the result written, on the issuer's device).
struct memory_loads {
  ratio copies{}, reductions{};
  friend constexpr bool operator==(const memory_loads&, const memory_loads&) = default;
};

// What one step asks of every rank, from one walk over its operations (every group's copy of
// each): alpha_beta_seconds prices a step from it, so it reads the step's operations once rather
// than once for each of its terms.
struct step_traffic {
  std::vector<ratio> links;       // link_loads(s, step, w): [from * ranks + to], shares of n
  std::vector<ratio> copies;      // per rank, the memory traffic of its transfer phase ...
  std::vector<ratio> reductions;  // ... and of its reduce phase (as memory_loads counts them)
  std::vector<int> operations;    // per rank, the operations it issues
};

constexpr step_traffic walk_step(const schedule_view& s, int step, const element_widths& w = {}) {
  const int R = s.spec().ranks;
  const symbol_shares v = ideal_shares(*s.header);
  const auto per_rank = static_cast<std::size_t>(R);
  step_traffic x{std::vector<ratio>(per_rank * per_rank), std::vector<ratio>(per_rank),
                 std::vector<ratio>(per_rank), std::vector<int>(per_rank, 0)};
  auto width = [&](buffer b) { return b == buffer::partial ? w.partial : ratio{1}; };
  for (int g = 0; g < s.groups(); ++g) {
    const group_layout L{g, s.spec().active, s.spec().ranks};
    for (const operation& op : s.ops) {
      if (op.step != step) continue;
      ++x.operations[static_cast<std::size_t>(L.rank_of(op.issuer(s.sources)))];
      const std::span<const operand> src = s.sources_of(op);
      const auto to = static_cast<std::size_t>(L.rank_of(op.dst.rank));
      if (op.phase == phase::transfer) {
        const auto from = static_cast<std::size_t>(L.rank_of(src[0].rank));
        const ratio load = detail::transfer_load(s, op, v, w);
        if (from != to) x.links[from * per_rank + to] += load;
        x.copies[from] += load;
        x.copies[to] += load;
        continue;
      }
      const ratio count = op.count.share(v);
      ratio load = count * width(op.dst.buf);
      for (const operand& o : src)
        load += count * width(o.buf);
      x.reductions[to] += load;
    }
  }
  return x;
}

namespace detail {
// The most one device's memory carries of per-rank loads (`load[r]`: rank r's), as load at the
// whole memory's rate: the ranks that share a device add up; where the device is divided among
// them (topology::divided_devices), a rank runs on its share of the memory alone, so its own load
// counts as many times as the ranks on its device (topology::device_share).
constexpr ratio busiest_device(const std::vector<ratio>& load, const topology& t) {
  std::vector<ratio> on(max_ranks);
  for (std::size_t r = 0; r < load.size(); ++r)
    on[t.device[r]] += load[r];
  ratio most{};
  for (const ratio& d : on)
    most = max(most, d);
  if (t.divided_devices) {
    std::vector<int> share(max_ranks);  // by device: its ranks (device_share), asked once
    for (std::size_t r = 0; r < load.size(); ++r) {
      int& s = share[t.device[r]];
      if (s == 0) s = t.device_share(static_cast<int>(r));
      most = max(most, load[r] * ratio{s});
    }
  }
  return most;
}

// The busiest device memory of a step on `t` (busiest_device), for its copies and its reductions.
constexpr memory_loads busiest_memory(const step_traffic& x, const topology& t) {
  return {busiest_device(x.copies, t), busiest_device(x.reductions, t)};
}

constexpr int most_operations(const step_traffic& x) {
  int most = 0;
  for (const int ops : x.operations)
    most = std::max(most, ops);
  return most;
}
}  // namespace detail

// The most operations (copies it sends, local copies, reductions) one rank issues in `step`,
// over every group.
constexpr int max_ops_per_rank(const schedule_view& s, int step) {
  return detail::most_operations(walk_step(s, step));
}

constexpr memory_loads step_memory(const schedule_view& s, const topology& t, int step,
                                   const element_widths& w = {}) {
  return detail::busiest_memory(walk_step(s, step, w), t);
}

// Predicted seconds for per-group count n of `element_size`-byte elements: the call's latency,
// then per step the step latency, the per-operation latency of the busiest rank, its transfer
// phase (the busiest link's bytes, or the busiest memory's copy traffic where that takes longer:
// the copies of a phase run at once, over links and memories alike) and then its reductions on
// the busiest memory.
constexpr double alpha_beta_seconds(const schedule_view& s, const topology& t, std::int64_t n,
                                    int element_size, const element_widths& w = {}) {
  double seconds = t.call_latency;
  const double bytes = static_cast<double>(n) * element_size;
  for (int step = 1; step <= s.header->steps; ++step) {
    const step_traffic x = walk_step(s, step, w);
    const memory_loads m = detail::busiest_memory(x, t);
    const double links =
        detail::busiest_link(x.links, t, s.spec().ranks).to_double() * bytes / t.link_bandwidth;
    const double copies = m.copies.to_double() * bytes / t.memory_bandwidth;
    seconds += t.step_latency + t.op_latency * detail::most_operations(x) +
               (links > copies ? links : copies) +
               m.reductions.to_double() * bytes / t.memory_bandwidth;
  }
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
RELAY_CONSTEXPR_SCHEDULE ratio ceiling(const schedule_view& s, const topology& t,
                                       const element_widths& w = {}) {
  return beta_cost(direct_counterpart(s), t, w) / beta_cost(s, t, w);
}

}  // namespace relay
