// What the serving tests share: random calls of one group that ranks which serve must follow
// (every collective, every dtype, every route the group has, route::automatic included, in and
// out of place, odd and zero counts, the fp8 wire now and then, each priced on one of three
// machines, so that the route and the wire taken are the publisher's to say: a serving rank has
// no machine), and an active rank's call of one with its own output checked against the naive
// reference (each active rank regenerates every rank's input from the case's seed; the serving
// ranks hold nothing to check).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "multiprocess/mp_support.hpp"

namespace relay::testing {

// A random call, and the machine its caller prices it on (null: mi300x).
struct served_case_t {
  property_case c;
  const topology* machine = nullptr;
};

// A random call of the single group `actives` (its order drawn too) on `ranks` ranks.
inline served_case_t served_case(std::mt19937_64& rng, const std::vector<int>& actives, int ranks,
                                 std::int64_t max_count) {
  served_case_t drawn;
  property_case& c = drawn.c;
  c.seed = rng();
  std::mt19937_64 r(c.seed);
  auto below = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(r); };
  c.ranks = ranks;
  c.active = static_cast<int>(actives.size());
  c.mode = mode::single;
  c.coll = all_collectives[static_cast<std::size_t>(below(4))];
  const std::array routes{route::relay,     route::relay,     route::direct,
                          route::pipelined, route::automatic, route::legacy};
  c.route = routes[static_cast<std::size_t>(below(c.active == 2 ? 6 : 5))];
  if (c.route == route::pipelined)
    c.tiles = std::array{2, 3, 4, 7}[static_cast<std::size_t>(below(4))];
  c.type = all_dtypes[static_cast<std::size_t>(below(static_cast<int>(all_dtypes.size())))];
  c.op = below(2) ? reduce_op::sum : reduce_op::avg;
  c.in_place = has_in_place(c.coll) && below(2) == 0;
  c.alignment = std::array<std::int64_t, 4>{128, 128, 1, 16}[static_cast<std::size_t>(below(4))];
  if ((c.seed >> 7) % 4 == 0) c.precision = precision::native_partials;
  std::vector<int> group = actives;
  std::shuffle(group.begin(), group.end(), r);
  c.groups = {group};
  c.counts = {std::min<std::int64_t>(random_count(r, c), max_count)};
  drawn.machine = std::array<const topology*, 3>{
      nullptr, &mi350x, &h200_nvswitch}[static_cast<std::size_t>(below(3))];
  // The fp8 wire on one float call in eight (not on route::automatic: the test knows its hops),
  // half of them the machine's encoding (wire_format::fp8: e4m3_fnuz on mi300x, e4m3 on the
  // others).
  const bool floating =
      c.type == dtype::float32 || c.type == dtype::float16 || c.type == dtype::bfloat16;
  if (floating && c.route != route::automatic && below(8) == 0) {
    c.wire = std::array{wire_format::fp8, wire_format::fp8_e4m3,
                        wire_format::fp8_e4m3_fnuz}[static_cast<std::size_t>(below(3))];
    c.wire_data = below(5);
  }
  return drawn;
}

// An active rank's call of `c`, its canaries, its input out of place and its output checked;
// empty where all is right, else what is wrong.
inline std::string call_and_check(communicator& comm, const served_case_t& drawn) {
  const property_case& c = drawn.c;
  const int me = comm.rank();
  const auto inputs = all_inputs(c);
  rank_frame frame(c, me, inputs[static_cast<std::size_t>(me)]);
  options opt;
  opt.route = c.route;
  opt.alignment = c.alignment;
  opt.tiles = c.tiles;
  opt.precision = c.precision;
  opt.wire = c.wire;
  opt.wire_threshold = 0;  // an fp8 case takes the wire at every count
  opt.machine = drawn.machine;
  const status s = run_collective(comm, c.coll, c.groups, frame.send(), frame.recv(), c.counts,
                                  c.type, c.op, opt);
  if (!s) return "the call failed: " + s.to_string();
  if (!frame.canaries_intact()) return "a canary byte changed";
  if (!c.in_place && frame.in_bytes > 0 &&
      !std::equal(inputs[static_cast<std::size_t>(me)].begin(),
                  inputs[static_cast<std::size_t>(me)].end(),
                  frame.bytes.begin() + static_cast<std::ptrdiff_t>(frame.in_off)))
    return "the input changed out of place";
  std::vector<std::vector<std::byte>> outputs(inputs.size());
  outputs[static_cast<std::size_t>(me)] = frame.output();
  const reference::call_data data{c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs};
  if (c.wire != wire_format::native) {
    const fp8_format f = c.wire == wire_format::fp8
                             ? (drawn.machine != nullptr ? *drawn.machine : mi300x).fp8
                             : fp8_format_of(c.wire);
    const reference::wire_check m =
        reference::check_outputs_fp8(data, f, reference::wire_hops(c.coll, c.route, c.active), me);
    if (m.wrong != 0)
      return std::to_string(m.wrong) + " elements outside the fp8 bound; first: " + m.first;
    return {};
  }
  const reference::mismatch_report m = reference::check_outputs(data, c.precision, false, me);
  if (m.wrong > 0) return std::to_string(m.wrong) + " wrong elements; first: " + m.first;
  return {};
}

}  // namespace relay::testing
