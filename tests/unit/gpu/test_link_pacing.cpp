// Mesh emulation's link clock (gpu/link_pacing.hpp) on the CPU: a tile's time on a link, booking a
// link, the bytes of each tile, the blocks per link, and the paced kernels' protocol on one link
// simulated with these functions. Every expected number is worked out by hand in the comments.
#include "relay/gpu/link_pacing.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

using namespace relay;
using gpu::book_link;
using gpu::link_ns;
using gpu::link_slot;

namespace {

constexpr std::uint64_t link_gbps(std::uint64_t g) {
  return g * 1'000'000'000ull;
}

}  // namespace

TEST_CASE("pacing: a link's time for some bytes, rounded up", "[gpu][pacing]") {
  // 64 KiB at 12 GB/s: 65536 / 12 = 5461.33 ns, so 5462: the link is never faster than B.
  STATIC_REQUIRE(link_ns(65536, link_gbps(12)) == 5462);
  // At 16 GB/s exactly 4096 ns.
  STATIC_REQUIRE(link_ns(65536, link_gbps(16)) == 4096);
  // One byte at 12 GB/s is 1/12 ns: a whole ns. Nothing costs nothing.
  STATIC_REQUIRE(link_ns(1, link_gbps(12)) == 1);
  STATIC_REQUIRE(link_ns(0, link_gbps(12)) == 0);
  // 1 GiB at 12 GB/s: 1073741824 / 12 = 89478485.33 ns, 89.5 ms (no overflow at 2^30 bytes).
  STATIC_REQUIRE(link_ns(std::uint64_t{1} << 30, link_gbps(12)) == 89478486);
}

TEST_CASE("pacing: booking a link", "[gpu][pacing]") {
  // An idle link (booked until 0) starts a transfer now.
  STATIC_REQUIRE(book_link(1000, 0, 5462) == link_slot{1000, 6462});
  // A busy one queues it after its last booking, whenever it is asked.
  STATIC_REQUIRE(book_link(1000, 6462, 5462) == link_slot{6462, 11924});
  STATIC_REQUIRE(book_link(6000, 6462, 5462) == link_slot{6462, 11924});
  // A link idle since 11924 does not bank the idle time: the transfer starts now.
  STATIC_REQUIRE(book_link(20000, 11924, 100) == link_slot{20000, 20100});

  // Two copies of 4 tiles of 64 KiB over one 16 GB/s link, their blocks booking in turn as fast
  // as they can (all at time 0): the 8 tiles queue back to back, 4096 ns each, so the last one
  // finishes at 8 * 4096 = 32768 ns: 512 KiB at 16 GB/s. Together B, not 2B.
  std::uint64_t booked = 0;
  link_slot last;
  for (int tile = 0; tile < 8; ++tile) {
    last = book_link(0, booked, link_ns(65536, link_gbps(16)));
    booked = last.finish;
  }
  CHECK(last == link_slot{28672, 32768});
  // Two copies over two links, the same 4 tiles each: each link's last tile ends at 4 * 4096.
  std::uint64_t link_a = 0, link_b = 0;
  for (int tile = 0; tile < 4; ++tile) {
    link_a = book_link(0, link_a, 4096).finish;
    link_b = book_link(0, link_b, 4096).finish;
  }
  CHECK(link_a == 16384);
  CHECK(link_b == 16384);
}

TEST_CASE("pacing: the bytes of each tile", "[gpu][pacing]") {
  // 3 unaligned bytes, 5000 units of 16 bytes, 7 more: 80010 bytes. Tiles of 4096 units: tile 0
  // moves 4096 * 16 = 65536 bytes and both ends (10), tile 1 the other 904 units (14464 bytes),
  // and there is no tile 2. The tiles add up to the copy.
  gpu::copy_desc c;
  c.head = 3;
  c.units = 5000;
  c.tail = 7;
  c.width = 16;
  CHECK(gpu::tile_bytes(c, 0, 4096) == 65546);
  CHECK(gpu::tile_bytes(c, 1, 4096) == 14464);
  CHECK(gpu::tile_bytes(c, 2, 4096) == 0);
  CHECK(65546 + 14464 == 3 + 5000 * 16 + 7);
  // Units of one byte (ends that never share a 2-byte alignment): the same count of units is a
  // sixteenth of the bytes.
  c = {};
  c.units = 5000;
  c.width = 1;
  CHECK(gpu::tile_bytes(c, 0, 4096) == 4096);
  CHECK(gpu::tile_bytes(c, 1, 4096) == 904);
  // A copy of 5 unaligned bytes has no units: its one tile moves the ends.
  c = {};
  c.head = 5;
  c.width = 16;
  CHECK(gpu::tiles_for(c.units, gpu::paced_tile_units) == 1);
  CHECK(gpu::tile_bytes(c, 0, gpu::paced_tile_units) == 5);
  // The paced tile: 256 threads x 16 units, 64 KiB of 16-byte units.
  STATIC_REQUIRE(gpu::paced_tile_units == 4096);
}

TEST_CASE("pacing: blocks per link grow with its rate", "[gpu][pacing]") {
  STATIC_REQUIRE(gpu::link_blocks(link_gbps(12)) == 2);        // 12 / 16 = 0 more
  STATIC_REQUIRE(gpu::link_blocks(link_gbps(16)) == 3);        // 1 more
  STATIC_REQUIRE(gpu::link_blocks(link_gbps(48)) == 5);        // 3 more: MI300X's 48 GB/s
  STATIC_REQUIRE(gpu::link_blocks(link_gbps(1000000)) == 16);  // at most 16
}

namespace {

// The paced kernel's protocol on one link, simulated on the host with the functions the kernel
// calls: `blocks` blocks walk `tiles` tiles of `slot` ns each. A block books its next tile when
// it is free (book_link at the clock's reading), wakes when the clock reaches the slot's start,
// moves the tile in `move` ns, and so on; its last wait is for its last slot's finish. The clock
// reads real time rounded down to `tick` ns (a coarse %globaltimer). Returns the link's slots in
// booking order and when the last block ends.
struct simulated_link {
  std::vector<link_slot> slots;
  std::uint64_t end = 0;
};

simulated_link simulate(int blocks, int tiles, std::uint64_t slot, std::uint64_t move,
                        std::uint64_t tick) {
  auto reading = [&](std::uint64_t t) { return t / tick * tick; };
  auto first_reading_at_least = [&](std::uint64_t t) { return (t + tick - 1) / tick * tick; };
  std::vector<std::uint64_t> at(static_cast<std::size_t>(blocks), 0), finish(at.size(), 0);
  simulated_link out;
  std::uint64_t booked = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    // The block that is free first books next (the lowest index on a tie).
    std::size_t b = 0;
    for (std::size_t j = 1; j < at.size(); ++j)
      if (at[j] < at[b]) b = j;
    const link_slot s = book_link(reading(at[b]), booked, slot);
    booked = s.finish;
    out.slots.push_back(s);
    at[b] = std::max(at[b], first_reading_at_least(s.start)) + move;
    finish[b] = s.finish;
  }
  for (std::size_t j = 0; j < at.size(); ++j)
    out.end = std::max(out.end, std::max(at[j], first_reading_at_least(finish[j])));
  return out;
}

// Whether every slot starts where the one before ended: the link never idled.
bool back_to_back(const simulated_link& l) {
  for (std::size_t i = 1; i < l.slots.size(); ++i)
    if (l.slots[i].start != l.slots[i - 1].finish) return false;
  return true;
}

}  // namespace

TEST_CASE("pacing: two blocks keep a link at its rate on a coarse clock", "[gpu][pacing]") {
  // 64 KiB tiles at 12 GB/s: 5462 ns a slot; 16 tiles are 87392 ns of link time.
  const std::uint64_t slot = link_ns(65536, link_gbps(12));
  REQUIRE(slot == 5462);
  SECTION("one block that moves a tile in 2 us, exact clock: the link never idles") {
    // The block books its next tile right after moving one, before its slot ends.
    const simulated_link l = simulate(1, 16, slot, 2000, 1);
    CHECK(back_to_back(l));
    CHECK(l.slots.back().finish == 16 * slot);
    CHECK(l.end == 16 * slot);  // its last wait is for the last slot's finish
  }
  SECTION("one block slower than the link (7 us a tile): gaps, the link runs below B") {
    const simulated_link l = simulate(1, 16, slot, 7000, 1);
    CHECK_FALSE(back_to_back(l));
    // Each tile then takes the block's 7000 ns: the last one ends at 16 * 7000.
    CHECK(l.end == 16 * 7000);
  }
  SECTION("two blocks (link_blocks at 12 GB/s), 7 us a tile and a 1 us clock: no gap") {
    REQUIRE(gpu::link_blocks(link_gbps(12)) == 2);
    const simulated_link l = simulate(2, 16, slot, 7000, 1000);
    CHECK(back_to_back(l));
    CHECK(l.slots.front().start == 0);
    CHECK(l.slots.back().finish == 16 * slot);
    // The last tile's block wakes at its slot's start read on the 1 us clock (at most 1 us
    // late) and moves for 7 us: the run ends within that of the link's last finish.
    CHECK(l.end >= 16 * slot);
    CHECK(l.end <= 16 * slot + 1000 + 7000);
  }
}
