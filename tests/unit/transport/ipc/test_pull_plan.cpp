// The pull form's rules (transport/ipc/pull_plan.hpp) and its stage for the form model:
// which calls it runs, what each rank reads and who reads it, the grid; expected values by hand.
#include "relay/transport/ipc/pull_plan.hpp"

#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"
#include "support/plan_builder.hpp"

using namespace relay;
using namespace relay::ipc;

TEST_CASE("pull form: which calls it runs", "[transport][ipc]") {
  plan p;
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {64, 64}), p));
  CHECK(pull_applies(p));
  plan fp8 = p;
  fp8.wire.taken = wire_format::fp8_e4m3;  // an fp8 wire keeps the plan's forms
  CHECK_FALSE(pull_applies(fp8));
  plan_request rs = test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {64, 64});
  rs.coll = collective::reduce_scatter;
  REQUIRE(make_plan(rs, p));
  CHECK_FALSE(pull_applies(p));
}

namespace {

// A role's members as a list to compare (the role holds a view of the plan's group).
std::vector<int> members(const pull_role& r) {
  return {r.members.begin(), r.members.end()};
}

}  // namespace

TEST_CASE("pull form: each rank's members and readers", "[transport][ipc]") {
  // Fused pairs of N = 4, int32, counts 8192 and 2048.
  plan p;
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {8192, 2048}), p));
  pull_role r = pull_role_of(p, 0);
  CHECK(members(r) == std::vector<int>{0, 1});
  CHECK(r.count == 8192);
  CHECK(r.readers == 0b0010);
  r = pull_role_of(p, 3);
  CHECK(members(r) == std::vector<int>{2, 3});
  CHECK(r.count == 2048);
  CHECK(r.readers == 0b0100);
  // Single mode, the pair {3, 1} of N = 4 (in active order): helpers 0 and 2 read nothing and
  // nobody reads them.
  REQUIRE(make_plan(test::direct_allreduce(mode::single, 4, {{3, 1}}, {100}), p));
  r = pull_role_of(p, 1);
  CHECK(members(r) == std::vector<int>{3, 1});
  CHECK(r.readers == 0b1000);
  for (int helper : {0, 2}) {
    r = pull_role_of(p, helper);
    CHECK(r.members.empty());
    CHECK(r.readers == 0);
  }
  // A group of count 0 takes no part.
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {0, 100}), p));
  CHECK(pull_role_of(p, 0).members.empty());
  CHECK(pull_role_of(p, 0).readers == 0);
  CHECK(members(pull_role_of(p, 2)) == std::vector<int>{2, 3});
}

TEST_CASE("pull form: one grid for every rank", "[transport][ipc]") {
  // 8192 int32 = 32 KiB: 4 tiles of 8 KiB; the smaller group does not matter.
  plan p;
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {8192, 2048}), p));
  CHECK(pull_grid(p, 66) == 4);
  CHECK(pull_grid(p, 2) == 2);  // the smallest one-shot grid of all ranks bounds it
  CHECK(pull_grid(p, 0) == 1);
  // 1 Mi int32 = 4 MiB = 512 tiles: at most max_pull_blocks.
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 2, {{0, 1}}, {1 << 20}), p));
  CHECK(pull_grid(p, 132) == 64);
  CHECK(pull_grid(p, 16) == 16);
  // One element still needs a block.
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 2, {{0, 1}}, {1}), p));
  CHECK(pull_grid(p, 66) == 1);
}

TEST_CASE("pull form: its stage, worked by hand", "[cost][ipc]") {
  // 8192 int32 = 32 KiB = 2 tiles of 16 KiB, each reading A = 2 members: 4; the other pair's
  // 8 KiB is 1 tile x 2.
  plan p;
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {8192, 2048}), p));
  CHECK(pull_stage_tiles(p, 16384) == 4);
}
