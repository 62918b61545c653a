// The ll form's rules (transport/ipc/ll_plan.hpp): which calls it runs (the pull form's, up to a
// slot's capacity), where a vector's words lie in a slot, and what a word says; expected values
// by hand.
#include "relay/transport/ipc/ll_plan.hpp"

#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"
#include "support/plan_builder.hpp"

using namespace relay;
using namespace relay::ipc;

TEST_CASE("ll form: the pull form's calls whose every input fits a slot", "[transport][ipc]") {
  // 256 KiB a slot: 65536 int32.
  static_assert(ll_capacity == 262144 && ll_slot_words == 65536);
  plan p;
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {65536, 64}), p));
  CHECK(ll_applies(p));
  REQUIRE(make_plan(test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {64, 65537}), p));
  CHECK_FALSE(ll_applies(p));  // the second group's 262148 bytes do not fit
  REQUIRE(make_plan(test::direct_allreduce(mode::single, 8, {{0, 1}}, {65537}), p));
  CHECK_FALSE(ll_applies(p));
  REQUIRE(make_plan(test::direct_allreduce(mode::single, 8, {{0, 1}}, {100}), p));
  CHECK(ll_applies(p));
  plan fp8 = p;
  fp8.wire.taken = wire_format::fp8_e4m3;  // not the pull form's: not ll's either
  CHECK_FALSE(ll_applies(fp8));
  plan_request rs = test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {64, 64});
  rs.coll = collective::reduce_scatter;
  REQUIRE(make_plan(rs, p));
  CHECK_FALSE(ll_applies(p));
}

TEST_CASE("ll form: a vector's words in a slot, and a word's call", "[transport][ipc]") {
  // 40 bytes: 3 vectors, the last padded. Word j of every vector together: vector 1's words at
  // 1, 4, 7, 10.
  CHECK(ll_vectors(40) == 3);
  CHECK(ll_vectors(48) == 3);
  CHECK(ll_vectors(49) == 4);
  CHECK(ll_vectors(0) == 0);
  CHECK(ll_word(1, 0, 3) == 1);
  CHECK(ll_word(1, 1, 3) == 4);
  CHECK(ll_word(1, 3, 3) == 10);
  // The largest call's last word is the slot's last.
  CHECK(ll_word(ll_vectors(ll_capacity) - 1, 3, ll_vectors(ll_capacity)) == ll_slot_words - 1);
  // A word carries 32 bits of data under the call's lower 32 bits.
  CHECK(ll_word_of(5, 0xDEADBEEFu) == 0x00000005DEADBEEFull);
  CHECK(ll_word_of(0x100000007ull, 1) == 0x0000000700000001ull);
  CHECK(ll_word_is(0x00000005DEADBEEFull, 5));
  CHECK_FALSE(ll_word_is(0x00000005DEADBEEFull, 7));  // the call two before, in the same slot
  CHECK_FALSE(ll_word_is(0, 1));                      // a slot never written names no call
}

TEST_CASE("ll form: each group runs the smallest kernel that holds it", "[transport][ipc]") {
  // A pair its own; 3 to 8 members (a node's GPUs) the kernel of 8; more, the kernel of 16.
  STATIC_REQUIRE(ll_kernel_members(1) == 2);
  STATIC_REQUIRE(ll_kernel_members(2) == 2);
  STATIC_REQUIRE(ll_kernel_members(3) == 8);
  STATIC_REQUIRE(ll_kernel_members(4) == 8);
  STATIC_REQUIRE(ll_kernel_members(8) == 8);
  STATIC_REQUIRE(ll_kernel_members(9) == 16);
  STATIC_REQUIRE(ll_kernel_members(16) == 16);
}
