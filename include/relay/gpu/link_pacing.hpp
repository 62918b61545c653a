// Mesh emulation's link clock, the arithmetic: each ordered pair of ranks (a link) moves at most B
// bytes per second at any moment, whatever else runs. Each link has a clock in device memory, the
// time (ns) its last booked transfer ends; a block about to move a tile of T bytes over the link
// books it: its slot starts when both the link is free and the clock says now, and lasts T/B
// (book_link). It waits for the slot's start, moves the tile, and before it ends it waits for the
// finish of its last slot, so no byte is visible earlier than a real link would have delivered it.
// Two copies over one link book one clock, so together they get B, not 2B.
//
// Both paced copy paths use it: the GPU executor's (exec/gpu/pacing.hpp, paced_copy.hpp) and the
// ipc transport's (transport/ipc/kernels.hpp); gpu/link_clock.hpp is the device side.
// docs/mesh-emulation.md says why it is built this way. No GPU runtime here: the device calls
// these same functions, and tests/unit/gpu/test_link_pacing.cpp checks them on the CPU with
// hand-worked numbers.
#pragma once

#include <algorithm>
#include <cstdint>

#include "relay/core/config.hpp"
#include "relay/gpu/copy_desc.hpp"

namespace relay::gpu {

// A paced copy's tile: 256 threads with 16 units each, 64 KiB of 16-byte units. Larger than the
// batched copy's (16 KiB) so that one block keeps 64 KiB in flight (far above a link's B) and a
// link is booked once per 5.5 us at 12 GB/s rather than per 1.4 us.
inline constexpr int paced_block = default_block;
inline constexpr int paced_unroll = 16;
inline constexpr std::uint64_t paced_tile_units = std::uint64_t{paced_block} * paced_unroll;

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
// (tests/unit/gpu/test_link_pacing.cpp simulates both). Faster links, shorter slots: one more block
// per 16 GB/s, 16 at most.
RELAY_HOST_DEVICE constexpr std::uint32_t link_blocks(std::uint64_t bytes_per_second) {
  const std::uint64_t n = 2 + bytes_per_second / 16'000'000'000ull;
  return static_cast<std::uint32_t>(n < 16 ? n : 16);
}

}  // namespace relay::gpu
