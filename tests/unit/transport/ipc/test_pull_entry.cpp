// The pull form's entry words (transport/ipc/pull_entry.hpp): what they carry, and that a word of
// another call, a torn announcement (some words of the last call of that parity) or a call 2^32
// apart in its lower half reads as not yet there. Expected words by hand.
#include "relay/transport/ipc/pull_entry.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>

using namespace relay;
using namespace relay::ipc;

namespace {

pull_entry entry_of(std::uint64_t fp, std::uint8_t code, std::uint8_t placement, std::uint64_t slot,
                    std::uint64_t offset) {
  pull_entry e;
  e.record.fingerprint = fp;
  e.record.code = code;
  e.record.placement = placement;
  e.in_slot = slot;
  e.in_offset = offset;
  return e;
}

constexpr bool round_trips() {
  pull_entry e;
  e.record.fingerprint = 0x0123456789ABCDEFull;
  e.record.code = 7;
  e.record.placement = 2;
  e.in_slot = 16;
  e.in_offset = 0x00AB'CDEF'0123'4567ull;
  std::uint64_t w[pull_entry_words] = {};
  pull_entry_encode(5, e, w);
  pull_entry d;
  return pull_entry_decode(5, w, d) && d.record.sequence == 5 &&
         d.record.fingerprint == e.record.fingerprint && d.record.code == 7 &&
         d.record.placement == 2 && d.in_slot == 16 && d.in_offset == e.in_offset &&
         !pull_entry_decode(7, w, d);
}
static_assert(round_trips());
static_assert(pull_word(3, 0xFFFF'FFFF'1234'5678ull) == 0x0000'0003'1234'5678ull);
static_assert(pull_word_is(pull_word(1ull << 32 | 9, 1), 9));  // the lower half names the call
static_assert(!pull_word_is(0, 1));                            // cleared memory is no call's

// A captured input's word (by hand): slot 3 (+ 1 in the top byte), offset 0x12345; zero: staged.
static_assert(graph_input_word(3, 0x12345) == 0x0400'0000'0001'2345ull);
static_assert(graph_input_slot(0x0400'0000'0001'2345ull) == 4);
static_assert(graph_input_offset(0x0400'0000'0001'2345ull) == 0x12345);
static_assert(graph_input_slot(0) == 0);  // a word cleared (or never written) stages the input
static_assert(graph_input_word(15, pull_entry_max_offset) == 0x10FF'FFFF'FFFF'FFFFull);

}  // namespace

TEST_CASE("pull entry: the words of a call, by hand", "[transport][ipc]") {
  const pull_entry e = entry_of(0x1122334455667788ull, 3, 1, 2, 0x0000'0012'3456'789Aull);
  std::array<std::uint64_t, pull_entry_words> w{};
  pull_entry_encode(0x1'0000'0007ull, e, w.data());
  CHECK(w[0] == 0x0000'0007'5566'7788ull);  // fingerprint, low half
  CHECK(w[1] == 0x0000'0007'1122'3344ull);  // its high half
  CHECK(w[2] == 0x0000'0007'0002'0103ull);  // code 3, placement 1, slot 2, offset bits 48..55: 0
  CHECK(w[3] == 0x0000'0007'3456'789Aull);  // offset, low half
  CHECK(w[4] == 0x0000'0007'0000'0012ull);  // offset bits 32..47
}

TEST_CASE("pull entry: another call's words, or some of them, are not there yet",
          "[transport][ipc]") {
  const pull_entry older = entry_of(11, 0, 1, 0, 0);
  const pull_entry newer = entry_of(22, 0, 1, 3, 4096);
  std::array<std::uint64_t, pull_entry_words> old_words{}, new_words{};
  pull_entry_encode(8, older, old_words.data());
  pull_entry_encode(10, newer, new_words.data());  // the same parity's slot, two calls on
  pull_entry got;
  CHECK_FALSE(pull_entry_decode(10, old_words.data(), got));
  for (int landed = 0; landed < pull_entry_words; ++landed) {
    // Words 0..landed-1 of call 10 have landed over call 8's, the rest not yet.
    std::array<std::uint64_t, pull_entry_words> torn = old_words;
    for (int i = 0; i < landed; ++i)
      torn[static_cast<std::size_t>(i)] = new_words[static_cast<std::size_t>(i)];
    CHECK_FALSE(pull_entry_decode(10, torn.data(), got));
    // And the other way round (stores land in any order).
    torn = new_words;
    torn[static_cast<std::size_t>(landed)] = old_words[static_cast<std::size_t>(landed)];
    CHECK_FALSE(pull_entry_decode(10, torn.data(), got));
  }
  REQUIRE(pull_entry_decode(10, new_words.data(), got));
  CHECK(got.record.fingerprint == 22);
  CHECK(got.in_slot == 3);
  CHECK(got.in_offset == 4096);
  std::array<std::uint64_t, pull_entry_words> cleared{};
  CHECK_FALSE(pull_entry_decode(1, cleared.data(), got));
}

TEST_CASE("pull entry: random entries come back whole", "[transport][ipc]") {
  const std::uint64_t seed = 20261202;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 10000; ++i) {
    const pull_entry e =
        entry_of(rng(), static_cast<std::uint8_t>(rng()), static_cast<std::uint8_t>(rng()),
                 rng() % (pull_entry_max_slot + 1), rng() & pull_entry_max_offset);
    const std::uint64_t call = rng() | 1;
    std::array<std::uint64_t, pull_entry_words> w{};
    pull_entry_encode(call, e, w.data());
    pull_entry d;
    INFO("seed " << seed << ", entry " << i);
    REQUIRE(pull_entry_decode(call, w.data(), d));
    CHECK(d.record.sequence == call);
    CHECK(d.record.fingerprint == e.record.fingerprint);
    CHECK(d.record.code == e.record.code);
    CHECK(d.record.placement == e.record.placement);
    CHECK(d.in_slot == e.in_slot);
    CHECK(d.in_offset == e.in_offset);
  }
}
