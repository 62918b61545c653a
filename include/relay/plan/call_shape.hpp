// What a call asks for, as one value: a collective call's arguments and options (call_shape),
// compared whole (a defaulted ==) and hashed (hash), so that the collective calls, the
// communicator's plan cache and the tools all hold a call the same way. A call goes
//
//   request (plan_request: the shape and the machine it is priced on)
//     -> choose (cost/choose.hpp: the route route::automatic takes, the wire; once per shape)
//     -> make (plan/make_plan.hpp: the plan of the shape as chosen; validated by validate.hpp)
//
// A field added to a call goes into call_options (if the caller sets it per call) or
// call_shape, and into hash() and describe() below: nowhere else.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/core/wire.hpp"
#include "relay/plan/plan.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/topology/topology.hpp"

namespace relay {

// The options of a call that shape its plan; every rank of a rank-local call passes them alike.
struct call_options {
  // route::automatic: per shape, the route (and pipeline depth) the cost model predicts fastest
  // on the machine at the call's count: direct for small messages, relay for large ones
  // (cost/choose.hpp).
  relay::route route = route::relay;
  int permille = 0;  // allreduce offload share (relay route); 0: the link-balanced default
  int tiles = 0;     // pipeline depth (pipelined route)
  std::int64_t alignment = default_alignment;  // elements; chunk sizes are multiples of it
  // fp16/bf16 partial sums: fp32 (one rounding, the default) or the element type (the spec's
  // 16-bit partials: fewer bytes, one more rounding; docs/schedules.md gives the bound).
  relay::precision precision = precision::fp32_partials;
  // How data crosses links (docs/schedules.md, "fp8 on the wire"): native, or fp8 blocks
  // quantized where data leaves a rank (wire_format::fp8: the machine's encoding, e4m3_fnuz on
  // mi300x; or fp8_e4m3 / fp8_e4m3_fnuz by name). float32, float16 and bfloat16 only. Below
  // `wire_threshold` bytes of the largest group count (-1: the cost model's threshold on the
  // machine, fp8_threshold_bytes; 0: always) the call runs natively; plan::wire says which.
  wire_format wire = wire_format::native;
  std::int64_t wire_threshold = -1;
  friend bool operator==(const call_options&, const call_options&) = default;
};

// A call's options as the caller passes them: the shape's, and two that are no part of it.
struct options : call_options {
  const topology* machine = nullptr;  // what route::automatic and the fp8 wire price; null: mi300x
  // Where the call writes the wire it took and why (describe(wire_choice) says it in words);
  // nullptr: nowhere.
  wire_choice* wire_report = nullptr;
};

using group_list = std::vector<std::vector<int>>;

// Everything a call asks for that its plan depends on.
struct call_shape : call_options {
  collective coll = collective::allreduce;
  relay::mode mode = mode::fused;
  int ranks = 8;
  // The active ranks of each group, in active order. Fused: N/A groups covering every rank once.
  // Single: one group; the ranks outside it help.
  group_list groups;
  std::vector<std::int64_t> counts;  // per group: count, recvCount, sendCount or segmentCount
  dtype type = dtype::float32;
  reduce_op op = reduce_op::sum;
  bool in_place = false;
  friend bool operator==(const call_shape&, const call_shape&) = default;
};

// A shape and the machine it is priced on (route::automatic, the fp8 threshold), which is no part
// of the shape: ranks whose topology objects live at different addresses ask alike.
struct plan_request : call_shape {
  const topology* machine = nullptr;  // nullptr: mi300x
};

// What the cost model chose for a shape (cost/choose.hpp): the schedule's route, offload share
// and pipeline depth (route::automatic made concrete; any other route as asked) and the wire.
struct call_choice {
  relay::route route = route::relay;
  int permille = 0;
  int tiles = 0;
  wire_choice wire{};
  friend bool operator==(const call_choice&, const call_choice&) = default;
};

// A 64-bit hash of every field of `s`: no allocation, no string.
inline std::uint64_t hash(const call_shape& s) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
  };
  auto u32 = [](int v) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(v)); };
  mix(static_cast<std::uint64_t>(s.coll) | static_cast<std::uint64_t>(s.type) << 8 |
      static_cast<std::uint64_t>(s.op) << 16 | static_cast<std::uint64_t>(s.route) << 24 |
      static_cast<std::uint64_t>(s.precision) << 32 | u32(s.ranks) << 40);
  mix(u32(s.permille) | u32(s.tiles) << 32);
  mix(static_cast<std::uint64_t>(s.alignment));
  mix(static_cast<std::uint64_t>(s.wire) ^ static_cast<std::uint64_t>(s.wire_threshold) << 8);
  mix(static_cast<std::uint64_t>(s.mode) | static_cast<std::uint64_t>(s.in_place) << 8);
  for (const std::vector<int>& g : s.groups) {
    mix(g.size());
    for (int r : g)
      mix(u32(r));
  }
  mix(s.counts.size());
  for (std::int64_t n : s.counts)
    mix(static_cast<std::uint64_t>(n));
  return h;
}

// `s` in one line: what a rank shows its peers when they called differently, and what its
// fingerprint is made of (the in-place form is no part of it: a rank-local call's plan is the
// out-of-place one).
inline std::string describe(const call_shape& s) {
  std::string t = std::string(name(s.coll)) + " " + std::string(name(s.mode)) + " " +
                  std::string(name(s.route)) + " permille=" + std::to_string(s.permille) +
                  " tiles=" + std::to_string(s.tiles) + " N=" + std::to_string(s.ranks) + " " +
                  std::string(name(s.type)) + " " + std::string(name(s.op)) +
                  " alignment=" + std::to_string(s.alignment) +
                  " precision=" + std::to_string(static_cast<int>(s.precision)) +
                  " wire=" + std::to_string(static_cast<int>(s.wire)) + ":" +
                  std::to_string(s.wire_threshold) + " groups=";
  for (std::size_t g = 0; g < s.groups.size(); ++g) {
    t += g ? "|" : "";
    for (std::size_t k = 0; k < s.groups[g].size(); ++k)
      t.append(k ? "," : "").append(std::to_string(s.groups[g][k]));
  }
  t += " counts=";
  for (std::size_t g = 0; g < s.counts.size(); ++g)
    t.append(g ? "," : "").append(std::to_string(s.counts[g]));
  return t;
}

// `s` with the schedule `c` chose: what the plan is made of.
inline call_shape as_chosen(call_shape s, const call_choice& c) {
  s.route = c.route;
  s.permille = c.permille;
  s.tiles = c.tiles;
  return s;
}

// The mode of a call of `groups` groups: one group is single, several are fused.
constexpr relay::mode mode_of_groups(std::size_t groups) {
  return groups == 1 ? mode::single : mode::fused;
}

// Where a caller names a mode besides passing the groups (the C ABI's relay_options.mode): ok
// when it is the mode those groups make.
inline status check_named_mode(relay::mode named, std::size_t groups) {
  if (named == mode_of_groups(groups)) return {};
  if (named == mode::fused)
    return {errc::invalid_group, "mode fused takes several groups; 1 was given"};
  return {errc::invalid_group,
          "mode single takes exactly one group, not " + std::to_string(groups)};
}

// Writes the shape of a call of collective `c` on `ranks` ranks into `s`, reusing its storage
// (a repeated call allocates nothing): the mode its groups make (mode_of_groups); the options
// from `opt`; the operator only where `c` reduces. Whether it runs in place is the caller's to
// say (buffers_in_place, placement_of).
inline void assign_call(call_shape& s, collective c, const group_list& groups, int ranks,
                        std::span<const std::int64_t> counts, dtype type, reduce_op op,
                        const call_options& opt) {
  static_cast<call_options&>(s) = opt;
  s.coll = c;
  s.mode = mode_of_groups(groups.size());
  s.ranks = ranks;
  s.groups = groups;
  // Element by element, not assign(): g++ 13 sees assign's memmove of a span of unknown length
  // as out of bounds (-Warray-bounds, a false positive) where this is inlined. A call has a few
  // counts; the storage is reused all the same.
  s.counts.clear();
  for (std::int64_t n : counts)
    s.counts.push_back(n);
  s.type = type;
  s.op = reduces(c) ? op : reduce_op::sum;
  s.in_place = false;
}

// The request of such a call, priced on opt.machine.
inline plan_request call_request(collective c, const group_list& groups, int ranks,
                                 std::span<const std::int64_t> counts, dtype type, reduce_op op,
                                 const options& opt) {
  plan_request r;
  assign_call(r, c, groups, ranks, counts, type, op, opt);
  r.machine = opt.machine;
  return r;
}

// A request for schedule `s` (collective, mode, route, permille, tiles, N) over `groups`, one
// count per group; dtype, operator, in-place form, alignment and precision are the defaults until
// the caller sets them.
inline plan_request request_for(const schedule_spec& s, group_list groups,
                                std::vector<std::int64_t> counts) {
  plan_request r;
  r.coll = s.coll;
  r.mode = s.mode;
  r.route = s.route;
  r.permille = s.permille;
  r.tiles = s.tiles;
  r.ranks = s.ranks;
  r.groups = std::move(groups);
  r.counts = std::move(counts);
  return r;
}

// What make_plan chose for `p`: make_plan(request_of(p), choice_of(p)) == p.
inline call_choice choice_of(const plan& p) {
  return {p.spec.route, p.spec.permille, p.spec.tiles, p.wire};
}

// The request make_plan made `p` from (with the route it took): make_plan(request_of(p)) == p.
inline plan_request request_of(const plan& p) {
  plan_request r = request_for(p.spec, p.groups, p.counts);
  r.type = p.type;
  r.op = p.op;
  r.in_place = p.in_place;
  r.alignment = p.alignment;
  r.precision = p.precision;
  r.wire = p.wire.requested;
  // The threshold the plan was decided with, as a number: the same decision again.
  if (p.wire.requested != wire_format::native)
    r.wire_threshold = p.wire.threshold_bytes == std::numeric_limits<std::uint64_t>::max()
                           ? std::numeric_limits<std::int64_t>::max()
                           : static_cast<std::int64_t>(p.wire.threshold_bytes);
  return r;
}

}  // namespace relay
