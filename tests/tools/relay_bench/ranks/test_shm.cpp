// The staging area a rank job sizes its transport with (ranks/shm.hpp's staging_bytes): it holds
// the largest call of the sweep, including parallel mode's plans, each a group alone.
#include "ranks/shm.hpp"

#include <catch2/catch.hpp>

using namespace relay;
using namespace relay::bench;

TEST_CASE("the staging area holds parallel mode's single-group plans", "[bench]") {
  options o;
  o.type = dtype::bfloat16;
  o.route = route_choice::relay;
  // An allreduce of 1 MiB, A=2 of N=8: on one H100 (2026-12-05) the ipc transport asked 2228224
  // bytes per rank for a group's plan alone, where the fused plan of the four groups needs
  // 1 MiB.
  const call_shape parallel{collective::allreduce, 2, 8, run_mode::parallel, 0};
  CHECK(staging_bytes(o, {parallel}, 1 << 20) >= 2228224);
  const call_shape fused{collective::allreduce, 2, 8, run_mode::fused, 0};
  CHECK(staging_bytes(o, {fused}, 1 << 20) >= (1 << 20));
}
