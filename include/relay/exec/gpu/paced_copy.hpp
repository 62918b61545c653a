// Mesh emulation's copy kernel: the batched copy with every tile between two ranks paced by its
// link's clock (exec/gpu/pacing.hpp has the launch's arithmetic, gpu/link_clock.hpp the clock).
// The executor launches it instead of the batched copy kernel when gpu_options::emulate_mesh is
// set, and never otherwise: the copy path without emulation is the batched kernel, untouched.
#pragma once

#include <cstdint>

#include "relay/exec/gpu/pacing.hpp"
#include "relay/gpu/copy_desc.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/link_clock.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

// One launch of paced copies: block b works for the entry whose blocks hold b, on tiles
// b - first_block, + blocks, ... of its copy. Per tile, thread 0 books the link and waits for the
// slot's start while the other threads wait at the barrier; then all move the tile. A block ends
// after its last slot's finish. A rank-local entry (no_link) copies without booking. Every wait
// is on the clock, never on another block, so the grid need not be resident at once.
// `moved[link]` counts the bytes each link carried (one atomic add per 64 KiB tile), so a run's
// link traffic can be read back and set against the plan's (plan.hpp, link_bytes).
template <bool Streaming = true>
__global__ void __launch_bounds__(paced_block)
    paced_copy_kernel(const copy_desc* descs, const paced_entry* entries, std::uint32_t n,
                      std::uint64_t* links, std::uint64_t* moved, std::uint64_t bytes_per_second) {
  std::uint32_t lo = 0, hi = n;  // the last entry with first_block <= blockIdx.x
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (entries[mid].first_block <= blockIdx.x)
      lo = mid;
    else
      hi = mid;
  }
  const paced_entry e = entries[lo];
  const copy_desc c = descs[e.desc];
  const std::uint64_t tiles = tiles_for(c.units, paced_tile_units);
  const bool paced = e.link != no_link;
  std::uint64_t finish = 0;  // thread 0's last slot
  for (std::uint64_t t = blockIdx.x - e.first_block; t < tiles; t += e.blocks) {
    if (paced) {  // the same for the whole block, so every thread meets the barrier
      if (threadIdx.x == 0) {
        const std::uint64_t bytes = tile_bytes(c, t, paced_tile_units);
        atomicAdd(reinterpret_cast<unsigned long long*>(moved + e.link),
                  static_cast<unsigned long long>(bytes));
        const link_slot s = book_link_atomic(links + e.link, link_ns(bytes, bytes_per_second));
        wait_until(s.start);
        finish = s.finish;
      }
      __syncthreads();
    }
    copy_desc_tile<paced_block, paced_unroll, Streaming>(c, t);
  }
  if (paced && threadIdx.x == 0) wait_until(finish);
}

}  // namespace relay::gpu
