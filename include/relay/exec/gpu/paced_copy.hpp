// Mesh emulation's copy kernel: the batched copy with every tile between two ranks paced by its
// link's clock (exec/gpu/pacing.hpp has the arithmetic and why). The executor launches it instead
// of the batched copy kernel when gpu_options::emulate_mesh is set, and never otherwise: the copy
// path without emulation is the batched kernel, untouched.
//
// Device clock: %globaltimer (ns) on NVIDIA; on AMD the wall clock (s_memrealtime), a constant
// 100 MHz on gfx9 (gfx90a, gfx942), so 10 ns a tick.
#pragma once

#include <cstdint>

#include "relay/exec/gpu/pacing.hpp"
#include "relay/gpu/copy_desc.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

__device__ inline std::uint64_t device_clock_ns() {
#if defined(RELAY_GPU_CUDA)
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return static_cast<std::uint64_t>(__builtin_amdgcn_s_memrealtime()) * 10;
#endif
}

// Spins (sleeping between looks) until the device clock reaches `t`.
__device__ inline void wait_until(std::uint64_t t) {
  while (device_clock_ns() < t) {
#if defined(RELAY_GPU_CUDA)
    __nanosleep(100);
#else
    __builtin_amdgcn_s_sleep(1);  // 64 cycles
#endif
  }
}

// Books `ns` on the link whose clock is `*link` (book_link, atomically against every other
// block booking it): retries with the clock it finds until no one booked in between.
__device__ inline link_slot book_link_atomic(std::uint64_t* link, std::uint64_t ns) {
  auto* until = reinterpret_cast<unsigned long long*>(link);  // not `clock`: a device function
  unsigned long long booked = atomicAdd(until, 0ull);
  for (;;) {
    const link_slot s = book_link(device_clock_ns(), booked, ns);
    const unsigned long long seen = atomicCAS(until, booked, s.finish);
    if (seen == booked) return s;
    booked = seen;
  }
}

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
