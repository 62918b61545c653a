// The ipc transport's user-memory decisions (transport/ipc/user_memory.hpp), without a device:
// which operands move with the call's buffers, the plan rules that let a rank's input stay where
// the caller keeps it, the registration lookup, and the per-call choice.
#include "relay/transport/ipc/user_memory.hpp"

#include <catch2/catch.hpp>
#include <random>

#include "relay/cost/choose.hpp"
#include "support/plan_builder.hpp"
#include "support/property_suite.hpp"

using namespace relay;
using namespace relay::ipc;

TEST_CASE("operand tags: this rank's input and output, a peer's output, else fixed",
          "[transport][ipc]") {
  CHECK(operand_tag({2, buffer::input, 64}, 2) == tag_my_input);
  CHECK(operand_tag({2, buffer::output, 0}, 2) == tag_my_output);
  CHECK(operand_tag({2, buffer::scratch, 0}, 2) == tag_fixed);
  CHECK(operand_tag({5, buffer::output, 8}, 2) == tag_peer_output + 5);
  CHECK(operand_tag({5, buffer::scratch, 8}, 2) == tag_fixed);
  CHECK(operand_tag({5, buffer::input, 8}, 2) ==
        tag_fixed);  // never written (plan_allows_user_memory)
  CHECK(operand_tag({63, buffer::output, 0}, 0) == 66);
}

TEST_CASE("every plan reads only its issuer's memory and writes no input", "[transport][ipc]") {
  // The rule that lets a rank read its input from the caller's buffer, checked over the property
  // suite's random cases (every collective, A=2 and 4, fused and single, every route), in place
  // and not; the out-of-place plan is what the ipc transport runs.
  std::mt19937_64 cases(20261201);
  for (int i = 0; i < 300; ++i) {
    testing::property_case c = testing::random_case(cases);
    for (auto& n : c.counts)
      n = std::min<std::int64_t>(n, 3000);
    INFO("seed 20261201, case " << i << ": " << c.describe());
    plan_request q =
        request_for({c.coll, c.active, c.ranks, c.mode, c.route, 0, c.tiles}, c.groups, c.counts);
    q.type = c.type;
    q.alignment = c.alignment;
    plan p;
    REQUIRE(make_plan(q, p));
    CHECK(plan_allows_user_memory(p));
    // Independently of plan_allows_user_memory: copies are issued by their source's rank.
    for (const plan_op& o : p.ops)
      if (o.phase == phase::transfer) REQUIRE(o.issuer(p.sources) == p.sources_of(o)[0].rank);
  }
  // A plan that writes an input, or reduces a peer's memory, is refused.
  plan p;
  REQUIRE(make_plan(test::direct_allreduce(mode::single, 4, {{0, 1}}, {64}), p));
  REQUIRE(plan_allows_user_memory(p));
  plan writes_input = p;
  writes_input.ops.front().dst.buf = buffer::input;
  CHECK_FALSE(plan_allows_user_memory(writes_input));
  plan remote_source = p;
  for (plan_op& o : remote_source.ops)
    if (o.phase == phase::reduce) {
      remote_source.sources[o.first_source].rank = static_cast<std::uint16_t>(o.dst.rank ^ 1);
      break;
    }
  CHECK_FALSE(plan_allows_user_memory(remote_source));
}

TEST_CASE("a buffer is registered when one registration holds all of it", "[transport][ipc]") {
  const std::vector<registration> slots{{0x1000, 0x2000}, {}, {0x8000, 0x9000}};
  auto at = [](std::uintptr_t a) { return reinterpret_cast<const void*>(a); };
  CHECK(find_registration(slots, at(0x1000), 0x1000) == 0);
  CHECK(find_registration(slots, at(0x1800), 0x800) == 0);
  CHECK(find_registration(slots, at(0x1800), 0x801) == -1);  // runs past the end
  CHECK(find_registration(slots, at(0x0fff), 16) == -1);
  CHECK(find_registration(slots, at(0x8010), 16) == 2);
  CHECK(find_registration(slots, at(0x5000), 16) == -1);  // between registrations
  CHECK(find_registration({}, at(0x1000), 16) == -1);
}

TEST_CASE("this rank's choice: the caller's buffers where they may be, staged otherwise",
          "[transport][ipc]") {
  alignas(16) std::byte memory[512];
  const buffer_view in{memory, 64}, out{memory + 256, 64}, odd{memory + 8, 64};
  auto choose = [&](placement w, buffer_view s, buffer_view r, int slot, bool ok = true) {
    return choose_user_memory(ok, w, s, s.bytes, r, r.bytes, slot);
  };
  // Out of place, output registered: both in the caller's buffers.
  user_memory_choice c = choose(placement::out_of_place, in, out, 3);
  CHECK(c.input);
  CHECK(c.output);
  CHECK(c.slot == 3);
  // Unregistered output: the input is still read in place, the output staged.
  c = choose(placement::out_of_place, in, out, -1);
  CHECK(c.input);
  CHECK_FALSE(c.output);
  CHECK(c.slot == -1);
  // Misaligned by 8 bytes: staged (the descriptors' vector widths assume 16).
  c = choose(placement::out_of_place, odd, odd, 1);
  CHECK_FALSE(c.input);
  CHECK_FALSE(c.output);
  // In place: one of the two only, the output when registered.
  c = choose(placement::in_place, in, in, 0);
  CHECK_FALSE(c.input);
  CHECK(c.output);
  c = choose(placement::in_place, in, in, -1);
  CHECK(c.input);
  CHECK_FALSE(c.output);
  // A helper (no bytes), or a plan that breaks the rules: both staged.
  c = choose_user_memory(true, placement::helper, {}, 0, {}, 0, -1);
  CHECK_FALSE(c.input);
  CHECK_FALSE(c.output);
  c = choose(placement::out_of_place, in, out, 3, false);
  CHECK_FALSE(c.input);
  CHECK_FALSE(c.output);
}

TEST_CASE(
    "the pull form reads an input in place only where it is registered, aligned and not "
    "overwritten",
    "[transport][ipc]") {
  alignas(16) std::byte memory[512];
  const auto base = reinterpret_cast<std::uintptr_t>(memory);
  // Slot 1 holds the first 256 bytes, slot 3 the rest; slot 0 and 2 are empty.
  const std::vector<registration> slots{{}, {base, base + 256}, {}, {base + 256, base + 512}};
  const buffer_view first{memory, 64}, second{memory + 320, 64}, odd{memory + 8, 64};
  CHECK(choose_pull_input(placement::out_of_place, first, 64, slots) == 1);
  CHECK(choose_pull_input(placement::out_of_place, second, 64, slots) == 3);
  // Across the two registrations: no one registration holds it.
  CHECK(choose_pull_input(placement::out_of_place, {memory + 224, 64}, 64, slots) == -1);
  // Misaligned by 8 bytes, in place (the output overwrites it), no bytes, nothing registered.
  CHECK(choose_pull_input(placement::out_of_place, odd, 64, slots) == -1);
  CHECK(choose_pull_input(placement::in_place, first, 64, slots) == -1);
  CHECK(choose_pull_input(placement::helper, {}, 0, slots) == -1);
  CHECK(choose_pull_input(placement::out_of_place, first, 64, {}) == -1);
}

TEST_CASE("the pull form's input place: the slot + 1 and the offset in its allocation",
          "[transport][ipc]") {
  const auto* input = reinterpret_cast<const void*>(std::uintptr_t{0x5000'0100});
  // Slot 2, its allocation starting 0x100 before the input: slot word 3, offset 0x100.
  pull_input_place at = pull_input_of(2, input, 0x5000'0000);
  CHECK(at.slot == 3);
  CHECK(at.offset == 0x100);
  // Not registered: staged (slot 0).
  at = pull_input_of(-1, input, 0);
  CHECK(at.slot == 0);
  CHECK(at.offset == 0);
  // An offset past the entry words' 56 bits: staged too.
  const auto* far = reinterpret_cast<const void*>(std::uintptr_t{1} << 57);
  CHECK(pull_input_of(0, far, 0).slot == 0);
  CHECK(pull_input_of(0, far, (std::uintptr_t{1} << 57) - (std::uintptr_t{1} << 56) + 1).slot == 1);
}
