// Mesh emulation: the arithmetic of pacing every copy between two ranks, so that each ordered
// pair of ranks (a link) moves at most B bytes per second at any moment, whatever else runs: a
// node with one link per pair (MI300X's XGMI) emulated on the ranks of one GPU.
// docs/mesh-emulation.md says why it is built this way; exec/gpu/paced_copy.hpp is its kernel.
//
// Each link has a clock in device memory: the time (ns) its last booked transfer ends. A block
// that is about to move a tile of T bytes over link (a, b) books the link: its slot starts when
// both the link is free and the clock says now, and lasts T/B (book_link). It waits for the
// slot's start, moves the tile, and before it ends it waits for the finish of its last slot, so
// no byte is visible (the kernel done) earlier than a real link would have delivered it. Two
// copies over one link book one clock, so together they get B, not 2B; copies over different
// links never wait for each other.
//
// Only copies between two ranks are paced: a reduction reads its own rank's memory only
// (validate_plan refuses anything else), and a copy within one rank is not a link.
//
// No GPU runtime here: the device calls these same functions, and tests/unit/exec/gpu/ checks them
// on the CPU with hand-worked numbers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "relay/core/config.hpp"
#include "relay/exec/gpu/lowering.hpp"
#include "relay/gpu/copy_desc.hpp"

namespace relay::gpu {

// A paced copy's tile: 256 threads with 16 units each, 64 KiB of 16-byte units. Larger than the
// batched copy's (16 KiB) so that one block keeps 64 KiB in flight (far above a link's B) and a
// link is booked once per 5.5 us at 12 GB/s rather than per 1.4 us.
inline constexpr int paced_block = default_block;
inline constexpr int paced_unroll = 16;
inline constexpr std::uint64_t paced_tile_units = std::uint64_t{paced_block} * paced_unroll;

// The link of a rank-local copy: none (it is not paced).
inline constexpr std::uint32_t no_link = 0xffffffffu;

// Nanoseconds a link of `bytes_per_second` (> 0) needs for `bytes` (< 2^34), rounded up: a
// link never moves faster than its rate.
RELAY_HOST_DEVICE constexpr std::uint64_t link_ns(std::uint64_t bytes,
                                                  std::uint64_t bytes_per_second) {
  return (bytes * 1'000'000'000ull + bytes_per_second - 1) / bytes_per_second;
}

// A transfer's time on its link, in ns of the device clock.
struct link_slot {
  std::uint64_t start = 0, finish = 0;
  friend constexpr bool operator==(const link_slot&, const link_slot&) = default;
};

// The slot of a transfer of `ns` on a link booked until `booked`, asked for at `now`: it starts
// when the link is free, and never before now (an idle link does not bank time it did not use).
RELAY_HOST_DEVICE constexpr link_slot book_link(std::uint64_t now, std::uint64_t booked,
                                                std::uint64_t ns) {
  const std::uint64_t start = now > booked ? now : booked;
  return {start, start + ns};
}

// The bytes tile `tile` of copy `c` moves when the copy is cut into tiles of `tile_units`
// units: its units times their width, and tile 0 also the unaligned ends.
RELAY_HOST_DEVICE constexpr std::uint64_t tile_bytes(const copy_desc& c, std::uint64_t tile,
                                                     std::uint64_t tile_units) {
  const std::uint64_t first = tile * tile_units;
  const std::uint64_t left = first < c.units ? c.units - first : 0;
  const std::uint64_t units = left < tile_units ? left : tile_units;
  return units * c.width + (tile == 0 ? std::uint64_t{c.head} + c.tail : 0);
}

// Blocks that walk one paced copy. A block books a tile, waits for its slot, moves it (64 KiB in
// flight: tens of GB/s) and books the next at once, before its slot ends: one block keeps a link
// busy while it moves a tile within a slot. Two leave room for a block slower than a slot (memory
// contention, a coarse clock waking it late): while one moves, the other's slot is booked next
// (tests/unit/exec/gpu/test_pacing.cpp simulates both). Faster links, shorter slots: one more block
// per 16 GB/s, 16 at most.
constexpr std::uint32_t link_blocks(std::uint64_t bytes_per_second) {
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(2 + bytes_per_second / 16'000'000'000ull, 16));
}

// Blocks for a rank-local copy in a paced launch: not a link, so as many as help (a block per
// tile, up to these), as the batched copy would.
inline constexpr std::uint32_t local_copy_blocks = 256;

// One copy of a paced launch and the blocks that walk it.
struct paced_entry {
  std::uint32_t first_block = 0;  // its blocks: [first_block, first_block + blocks)
  std::uint32_t blocks = 0;
  std::uint32_t link = no_link;  // source rank * ranks + destination rank; no_link: rank-local
  std::uint32_t desc = 0;        // its copy in the launch's list
  friend constexpr bool operator==(const paced_entry&, const paced_entry&) = default;
};

// What one paced launch gets: the copies, an entry per copy (in the same order) and the grid,
// every entry's blocks back to back.
struct paced_launch {
  std::vector<copy_desc> copies;
  std::vector<paced_entry> entries;
  std::uint32_t grid = 0;
};

// One lane's copies of one phase as a paced launch for a plan of `ranks` ranks, links of
// `bytes_per_second` each way. Each copy gets its own blocks (at most one per tile), also where
// several share a link: their blocks book the one clock, which is what makes them share it.
// Copies over links come first, rank-local ones after: blocks start in grid order, so a local
// copy's hundreds of blocks listed first would hold the device while the links wait (the step's
// local copy then runs before its transfers instead of beside them).
inline paced_launch plan_paced(std::span<const lowered_copy> copies, int ranks,
                               std::uint64_t bytes_per_second) {
  paced_launch out;
  const std::uint32_t per_link = link_blocks(bytes_per_second);
  std::vector<const lowered_copy*> order;
  for (const lowered_copy& c : copies)
    if (c.src_rank != c.dst_rank) order.push_back(&c);
  for (const lowered_copy& c : copies)
    if (c.src_rank == c.dst_rank) order.push_back(&c);
  for (const lowered_copy* at : order) {
    const lowered_copy& c = *at;
    const copy_desc d = make_copy(c.src, c.dst, c.bytes);
    const bool local = c.src_rank == c.dst_rank;
    const std::uint64_t tiles = tiles_for(d.units, paced_tile_units);
    const std::uint64_t most = local ? local_copy_blocks : per_link;
    paced_entry e;
    e.first_block = out.grid;
    e.blocks = static_cast<std::uint32_t>(std::min(tiles, most));
    e.link = local ? no_link : static_cast<std::uint32_t>(c.src_rank * ranks + c.dst_rank);
    e.desc = static_cast<std::uint32_t>(out.copies.size());
    out.copies.push_back(d);
    out.entries.push_back(e);
    out.grid += e.blocks;
  }
  return out;
}

}  // namespace relay::gpu
