// Link loads of the pipelined single-group schedules (A=4, N=8, T=4), counted over the concrete
// plan make_plan builds: every transfer's bytes added to its (step, from, to), against constants
// worked out by hand from the layouts in schedule/pipelined_group.hpp.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"

using namespace relay;

namespace {

// The classes of link direction: active to active, active to helper, helper to active, helper
// to helper.
enum link_class { aa, ah, ha, hh };

// Bytes per (step, from, to), from the plan's operations.
struct counted_loads {
  int ranks = 0;
  std::vector<std::uint64_t> bytes;  // [(step - 1) * ranks * ranks + from * ranks + to]
  std::uint64_t at(int step, int from, int to) const {
    return bytes[static_cast<std::size_t>(((step - 1) * ranks + from) * ranks + to)];
  }
};

counted_loads count_loads(const plan& p) {
  counted_loads c;
  c.ranks = p.ranks();
  int steps = 0;
  for (const plan_op& op : p.ops)
    steps = std::max<int>(steps, op.step);
  c.bytes.assign(static_cast<std::size_t>(steps * c.ranks * c.ranks), 0);
  for (const plan_op& op : p.ops) {
    const int from = p.sources[op.first_source].rank, to = op.dst.rank;
    if (op.phase != phase::transfer || from == to) continue;
    c.bytes[static_cast<std::size_t>(((op.step - 1) * c.ranks + from) * c.ranks + to)] +=
        op.count * static_cast<std::uint64_t>(p.dst_width(op));
  }
  return c;
}

// Expected chunks per link direction of each class, per step (T+1 = 5 steps).
using per_step = std::array<std::array<int, 4>, 5>;

// Checks every link direction of the plan against `chunks` (in units of `chunk_bytes`).
void check_loads(const plan& p, const per_step& chunks, std::uint64_t chunk_bytes) {
  const counted_loads c = count_loads(p);
  std::vector<bool> active(static_cast<std::size_t>(p.ranks()), false);
  for (int r : p.groups[0])
    active[static_cast<std::size_t>(r)] = true;
  for (int step = 1; step <= 5; ++step)
    for (int from = 0; from < p.ranks(); ++from)
      for (int to = 0; to < p.ranks(); ++to) {
        if (from == to) continue;
        const bool fa = active[static_cast<std::size_t>(from)];
        const bool ta = active[static_cast<std::size_t>(to)];
        const link_class k = fa ? (ta ? aa : ah) : (ta ? ha : hh);
        INFO("step " << step << ", " << from << " -> " << to);
        CHECK(c.at(step, from, to) ==
              static_cast<std::uint64_t>(
                  chunks[static_cast<std::size_t>(step - 1)][static_cast<std::size_t>(k)]) *
                  chunk_bytes);
      }
}

// One group of 4 on 8 ranks, in a shuffled order (the plan maps canonical ranks onto it), with a
// count of `chunks_per_n` chunks of 128 elements: every quantum comes out exact.
plan make(collective coll, std::int64_t chunks_per_n, dtype type = dtype::float32) {
  plan_request r = request_for({coll, 4, 8, mode::single, route::pipelined, 0, 4}, {{5, 2, 7, 0}},
                               {chunks_per_n * 128});
  r.type = type;
  plan p;
  REQUIRE(make_plan(r, p));
  return p;
}

}  // namespace

TEST_CASE("pipelined A=4 all-gather: link loads over the plan", "[plan][pipelined]") {
  // n = (7T+1)c = 29c. Step 1: c to each helper, the direct piece of c to each active. Steps
  // 2..4: c to each helper, 3c back from each (chunk i of the 3 other actives), 3c direct.
  // Step 5: the forward of tile 3 (3c) and the last direct piece, n - 16c - 10c = 3c.
  const per_step chunks{{{1, 1, 0, 0}, {3, 1, 3, 0}, {3, 1, 3, 0}, {3, 1, 3, 0}, {3, 0, 3, 0}}};
  check_loads(make(collective::all_gather, 29), chunks, 128 * 4);
}

TEST_CASE("pipelined A=4 reduce-scatter: link loads over the plan", "[plan][pipelined]") {
  // n = 29c. Steps 1..4: 3c to each helper (the chunk of each of 3 other blocks), 3c direct;
  // steps 2..5: one partial of c back from each helper; step 5's direct piece n - 16c - 12c = c.
  const per_step chunks{{{3, 3, 0, 0}, {3, 3, 1, 0}, {3, 3, 1, 0}, {3, 3, 1, 0}, {1, 0, 1, 0}}};
  check_loads(make(collective::reduce_scatter, 29), chunks, 128 * 4);
  // bf16: a partial travels as fp32, 4 bytes an element, twice a bf16 element's 2: in units of
  // 2-byte chunks of 128, the return hop carries 2 where the rest is unchanged.
  const per_step wide{{{3, 3, 0, 0}, {3, 3, 2, 0}, {3, 3, 2, 0}, {3, 3, 2, 0}, {1, 0, 2, 0}}};
  check_loads(make(collective::reduce_scatter, 29, dtype::bfloat16), wide, 128 * 2);
}

TEST_CASE("pipelined A=4 all-to-all: link loads over the plan", "[plan][pipelined]") {
  // n = (7T+3)c = 31c per segment. Steps 1..4: 3c to each helper (a chunk of each of 3
  // segments); steps 2..5: 3c back (a chunk from each of 3 sources); 3c direct in every step,
  // the last n - 16c - 12c = 3c.
  const per_step chunks{{{3, 3, 0, 0}, {3, 3, 3, 0}, {3, 3, 3, 0}, {3, 3, 3, 0}, {3, 0, 3, 0}}};
  check_loads(make(collective::all_to_all, 31), chunks, 128 * 4);
}

TEST_CASE("pipelined A=4 allreduce: link loads over the plan", "[plan][pipelined]") {
  // n = (12T+2)c = 50c. Helper chunks are 2c: to the helpers in steps 1..4, reduced back in
  // 2..5. Active pairs: step 1 a direct piece (c) and the exchange piece e1 (c); steps 2..4 a
  // direct piece and a reduced one (c each); step 5 a reduced piece and e2, n - 32c - 16c - c =
  // c. Every active link carries 2c each way in every full step.
  const per_step chunks{{{2, 2, 0, 0}, {2, 2, 2, 0}, {2, 2, 2, 0}, {2, 2, 2, 0}, {2, 0, 2, 0}}};
  check_loads(make(collective::allreduce, 50), chunks, 128 * 4);
}
