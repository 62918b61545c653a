// Calls larger than a transport's data area, written once for every transport (mp_pieces.cpp:
// shm; tests/gpu/transport/ipc: ipc): every collective, A = 2 and 4, fused and single, the
// direct, relay, pipelined and automatic routes, in and out of place, float32, bfloat16 and int32,
// and the fp8 wire, each at 1x, 2x, 4x and 9.5x the area (1x: the largest count whose plan fits,
// the groups' counts equal; above, unequal), checked against the naive reference
// (mp_support.hpp: run_and_check). A call that fits runs whole (one sequence number); a larger
// one in pieces, at least as many as its plan's area over the area's size.
#pragma once

#include <cmath>

#include "multiprocess/mp_support.hpp"
#include "relay/cost/choose.hpp"

namespace relay::testing {

namespace pieces_detail {

// The whole plan `c` makes at `counts`: its largest area per rank.
inline std::uint64_t area_of(const property_case& c, const std::vector<std::int64_t>& counts) {
  call_shape s;
  call_options o;
  o.route = c.route;
  o.alignment = c.alignment;
  o.tiles = c.tiles;
  o.wire = c.wire;
  o.wire_threshold = 0;
  assign_call(s, c.coll, c.groups, c.ranks, counts, c.type, c.op, o);
  plan_request r;
  static_cast<call_shape&>(r) = s;
  plan p;
  if (!make_plan(s, choose(r), p)) return ~std::uint64_t{0};
  return largest_area(p);
}

// The largest count (a multiple of 16) whose plan fits `area`.
inline std::int64_t largest_fitting(const property_case& c, std::uint64_t area) {
  std::int64_t lo = 0, hi = 1 << 24;
  while (hi - lo > 16) {
    const std::int64_t mid = (lo + hi) / 2 / 16 * 16;
    (area_of(c, std::vector<std::int64_t>(c.groups.size(), mid)) <= area ? lo : hi) = mid;
  }
  return lo;
}

inline std::vector<property_case> cases(int ranks) {
  std::vector<property_case> out;
  std::uint64_t seed = 20261206;
  const dtype types[] = {dtype::float32, dtype::bfloat16, dtype::int32};
  int k = 0;
  for (collective coll : all_collectives)
    for (int A : {2, 4})
      for (mode m : {mode::fused, mode::single})
        for (route rt : {route::direct, route::relay, route::pipelined, route::automatic})
          for (bool in_place : {false, true}) {
            if (in_place && !has_in_place(coll)) continue;
            if (spec_error({coll, A, ranks, m, rt, 0, rt == route::pipelined ? 4 : 0}) != nullptr)
              continue;
            property_case c;
            c.coll = coll, c.active = A, c.ranks = ranks, c.mode = m, c.route = rt;
            c.tiles = rt == route::pipelined ? 4 : 0;
            c.type = types[k++ % 3];
            c.op = reduce_op::sum;
            c.in_place = in_place;
            for (int g = 0; g < (m == mode::fused ? ranks / A : 1); ++g) {
              c.groups.emplace_back();
              for (int j = 0; j < A; ++j)
                c.groups.back().push_back((g * A + j + 3) % ranks);  // not in rank order
            }
            c.seed = seed++;
            out.push_back(c);
          }
  // The fp8 wire, on allreduce and reduce-scatter (its ends are the receivers' in pieces too).
  for (collective coll : {collective::allreduce, collective::reduce_scatter}) {
    property_case c;
    c.coll = coll, c.active = 2, c.ranks = ranks, c.mode = mode::fused, c.route = route::relay;
    c.type = dtype::bfloat16;
    c.wire = wire_format::fp8_e4m3;
    c.wire_data = 1;
    for (int g = 0; g < ranks / 2; ++g)
      c.groups.push_back({2 * g, 2 * g + 1});
    c.seed = seed++;
    out.push_back(c);
  }
  return out;
}

}  // namespace pieces_detail

// Every `stride`-th case at the four sizes, each made on every rank through `run(c, frame)` (as
// property_run's). Returns the process's exit status; a failure names the case and the size.
template <class Run>
int pieces_run(communicator& comm, int stride, const char* where, Run&& run) {
  using namespace pieces_detail;
  const std::uint64_t area = comm.transport().area_bytes();
  if (area == 0 || area > (std::uint64_t{1} << 22)) {
    std::fprintf(stderr, "run with a small data area (64 KiB): the area is %llu bytes\n",
                 static_cast<unsigned long long>(area));
    return 2;
  }
  const std::vector<property_case> all = cases(comm.size());
  int made = 0;
  for (std::size_t i = 0; i < all.size(); i += static_cast<std::size_t>(std::max(1, stride)))
    for (double times : {1.0, 2.0, 4.0, 9.5}) {
      property_case c = all[i];
      const std::int64_t fits = largest_fitting(c, area);
      for (std::size_t g = 0; g < c.groups.size(); ++g)
        c.counts.push_back(
            static_cast<std::int64_t>(std::llround(static_cast<double>(fits) * times)) -
            (times > 1 ? static_cast<std::int64_t>(g) * 37 : 0));
      const std::uint64_t need = area_of(c, c.counts);
      const std::uint64_t before = comm.calls_made();
      std::string wrong = run_and_check(comm, c, run);
      const std::uint64_t rounds = comm.calls_made() - before;
      if (wrong.empty() && times == 1.0 && rounds != 1)
        wrong = "a call that fits ran in " + std::to_string(rounds) + " rounds";
      if (wrong.empty() && times > 1.0 && rounds < (need + area - 1) / area)
        wrong = "a call of " + std::to_string(need) + " bytes a rank ran in " +
                std::to_string(rounds) + " rounds on an area of " + std::to_string(area);
      if (!wrong.empty()) {
        std::fprintf(stderr, "case %zu at %.1fx the area: %s: %s\n", i, times, c.describe().c_str(),
                     wrong.c_str());
        return 1;
      }
      ++made;
    }
  if (comm.rank() == 0)
    std::printf(
        "%d calls of 1x to 9.5x the %llu-byte area over %d processes%s, every output "
        "right on every rank\n",
        made, static_cast<unsigned long long>(area), comm.size(), where);
  return 0;
}

}  // namespace relay::testing
