// Where a staging transport (shm, ipc) puts a rank's input, output and scratch: each region
// 256-byte aligned, in that order, large enough for what the plan says, and the largest rank's
// need is what every rank compares with its area.
#include "relay/plan/area_layout.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"

using namespace relay;

TEST_CASE("area layout: aligned, ordered, large enough, largest_area is the most any rank needs",
          "[plan][area]") {
  plan_request q;
  q.coll = collective::allreduce;
  q.mode = mode::fused;
  q.ranks = 8;
  q.groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  q.counts = {1, 847, 2048, 13};
  q.type = dtype::bfloat16;
  plan p;
  REQUIRE(make_plan(q, p));
  std::uint64_t most = 0;
  for (std::size_t r = 0; r < 8; ++r) {
    const area_layout a = layout_of(p, r);
    CHECK(a.input == 0);
    CHECK(a.output % 256 == 0);
    CHECK(a.scratch % 256 == 0);
    CHECK(a.output >= p.input_bytes[r]);
    CHECK(a.scratch >= a.output + p.output_bytes[r]);
    CHECK(a.end == a.scratch + p.scratch_bytes[r]);
    most = std::max(most, a.end);
  }
  CHECK(largest_area(p) == most);
  CHECK(most > 0);
}
