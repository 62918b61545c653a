// The binding rule (plan/bind.hpp): an operand's memory from its rank's three areas, the areas of
// a staged region, and the fp8 image's two ends; addresses worked out by hand.
#include "relay/plan/bind.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>

using namespace relay;

TEST_CASE("an operand's memory is its area's start plus its offset", "[plan]") {
  std::array<std::byte, 64> in{}, out{}, scratch{};
  const rank_areas<std::byte> at{in.data(), out.data(), scratch.data()};
  CHECK(address_of(plan_operand{3, buffer::input, 0}, at) == in.data());
  CHECK(address_of(plan_operand{3, buffer::output, 16}, at) == out.data() + 16);
  CHECK(address_of(plan_operand{3, buffer::scratch, 40}, at) == scratch.data() + 40);
  // Partial sums are scratch to an executor (make_plan names them so).
  CHECK(address_of(plan_operand{3, buffer::partial, 8}, at) == scratch.data() + 8);
}

TEST_CASE("a staged region holds input, output and scratch as area_layout places them", "[plan]") {
  plan p;
  p.spec.ranks = 2;
  p.input_bytes = {100, 0};
  p.output_bytes = {300, 0};
  p.scratch_bytes = {64, 0};
  std::array<unsigned char, 2048> region{};
  const rank_areas<unsigned char> at = areas_at(region.data(), layout_of(p, 0));
  // Each area starts 256-byte aligned: input at 0, output at 256, scratch at 256 + 512.
  CHECK(address_of(plan_operand{0, buffer::input, 4}, at) == region.data() + 4);
  CHECK(address_of(plan_operand{0, buffer::output, 4}, at) == region.data() + 256 + 4);
  CHECK(address_of(plan_operand{0, buffer::scratch, 4}, at) == region.data() + 768 + 4);
}

TEST_CASE("an fp8 image's ends are operands in the sender's and the receiver's scratch", "[plan]") {
  plan p;
  p.sources = {plan_operand{5, buffer::input, 0}};
  p.ops = {plan_op{.first_source = 0, .dst = plan_operand{2, buffer::output, 0}, .count = 32}};
  p.wire_slots = {wire_slot{1024, 2048}};
  CHECK(wire_send_end(p, 0) == plan_operand{5, buffer::scratch, 1024});
  CHECK(wire_recv_end(p, 0) == plan_operand{2, buffer::scratch, 2048});
}
