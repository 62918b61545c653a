// Mesh emulation in the GPU executor: every copy between two ranks paced by its link's clock
// (gpu/link_pacing.hpp: the clock's arithmetic, which the ipc transport's pacing shares), so that
// each ordered pair of ranks (a link) moves at most B bytes per second at any moment, whatever
// else runs: a node with one link per pair (MI300X's XGMI) emulated on the ranks of one GPU.
// docs/mesh-emulation.md says why it is built this way; exec/gpu/paced_copy.hpp is its kernel.
// Here: a lane's copies of one phase made into one paced launch, each copy with its own blocks;
// copies over different links never wait for each other.
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
#include "relay/gpu/link_pacing.hpp"

namespace relay::gpu {

// The link of a rank-local copy: none (it is not paced).
inline constexpr std::uint32_t no_link = 0xffffffffu;

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
