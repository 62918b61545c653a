// The choice made once per shape (cost/choose.hpp): the route route::automatic takes and the
// wire, before and apart from the plan.
#include "relay/cost/choose.hpp"

#include <catch2/catch.hpp>

using namespace relay;

namespace {

plan_request pairs(collective c, std::int64_t n, dtype t) {
  plan_request r;
  r.coll = c;
  r.ranks = 8;
  r.groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  r.counts.assign(4, n);
  r.type = t;
  return r;
}

}  // namespace

// Allreduce A=2 N=8 fused on mi300x (48 GB/s a link, 10 us a step), float32: relay 20 us +
// (n/4) * 4 B / 48 GB/s, direct 10 us + n * 4 B / 48 GB/s: equal at n = 160,000.
TEST_CASE("choose: route::automatic takes the model's route, any other route as asked", "[cost]") {
  plan_request r = pairs(collective::allreduce, 1000, dtype::float32);
  r.route = route::automatic;
  r.tiles = 7;  // chosen too: none on the direct and relay routes
  CHECK(choose(r) == call_choice{route::direct, 0, 0, {}});
  r.counts.assign(4, 1 << 20);
  CHECK(choose(r) == call_choice{route::relay, 0, 0, {}});
  r.machine = &h200_nvswitch;  // behind a switch relaying never pays
  CHECK(choose(r).route == route::direct);
  r.machine = nullptr;
  // A group covering the node: direct, the only route there.
  r.groups = {{0, 1, 2, 3, 4, 5, 6, 7}};
  r.mode = mode::single;
  r.counts = {1 << 20};
  CHECK(choose(r).route == route::direct);
  // A shape the relay route refuses keeps route relay, so that make_plan names the problem.
  r = pairs(collective::all_gather, 1 << 20, dtype::float32);
  r.route = route::automatic;
  r.permille = 300;  // an offload share outside an allreduce
  CHECK(choose(r) == call_choice{route::relay, 300, 0, {}});
  plan p;
  CHECK(make_plan(r, p).message().find("permille") != std::string::npos);
  // Any route but automatic: as asked.
  r = pairs(collective::allreduce, 8, dtype::float32);
  r.route = route::legacy;
  r.permille = 500;
  CHECK(choose(r) == call_choice{route::legacy, 500, 0, {}});
}

TEST_CASE("choose: the fp8 wire is the machine's encoding where the call reaches the threshold",
          "[cost]") {
  plan_request r = pairs(collective::allreduce, 4096, dtype::bfloat16);
  r.wire = wire_format::fp8;
  r.wire_threshold = 8192;  // bytes of the largest group: 4096 bf16 elements reach it
  const wire_choice fnuz{wire_format::fp8_e4m3_fnuz, wire_format::fp8_e4m3_fnuz, 8192, 8192};
  CHECK(choose(r).wire == fnuz);
  r.machine = &h200_nvswitch;  // its encoding: e4m3
  CHECK(choose(r).wire == wire_choice{wire_format::fp8_e4m3, wire_format::fp8_e4m3, 8192, 8192});
  r.machine = nullptr;
  r.counts = {4095, 10, 10, 10};  // below: native, and the choice says why
  CHECK(choose(r).wire == wire_choice{wire_format::fp8_e4m3_fnuz, wire_format::native, 8190, 8192});
  // A shape that cannot be made is not priced: the fp8 wire takes no int32 data.
  r.type = dtype::int32;
  CHECK(choose(r).wire == wire_choice{});
  plan p;
  CHECK(make_plan(r, p).message().find("fp8 wire") != std::string::npos);
}

TEST_CASE("make_plan(shape, choice) makes what make_plan(request) chooses and makes", "[cost]") {
  plan_request r = pairs(collective::reduce_scatter, 300000, dtype::bfloat16);
  r.route = route::automatic;
  r.wire = wire_format::fp8;
  plan chosen_and_made, made;
  REQUIRE(make_plan(r, chosen_and_made));
  REQUIRE(make_plan(r, choose(r), made));
  CHECK(made == chosen_and_made);
  CHECK(choice_of(made) == choose(r));
  CHECK(made.spec.route == choose(r).route);
}
