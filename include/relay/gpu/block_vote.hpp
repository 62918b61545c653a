// A vote of a block's threads at a barrier: each thread casts a few bits, and after the barrier
// any thread reads their OR. A warp's first thread stores its warp's OR (a warp vote), so there is
// no shared word to clear before the threads cast (which would cost a barrier of its own), and no
// __syncthreads_or (HIP 5 compiles it for gfx90a with an instruction gfx90a lacks).
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <cstdint>

#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

#if defined(RELAY_GPU_HIP)
inline constexpr int warp_threads = 64;  // the wave of every AMD target relay builds (gfx9)
#else
inline constexpr int warp_threads = 32;
#endif

// Block: the block's threads, a multiple of warp_threads; Bits: the bits each thread casts.
template <int Block, int Bits>
struct block_vote {
  static_assert(Block % warp_threads == 0, "a block of whole warps");
  static_assert(Bits > 0 && Bits <= 32);
  std::uint32_t warps[Block / warp_threads];

  // By every thread of the block, in control flow the same for the whole warp, before the barrier.
  __device__ void cast(std::uint32_t bits) {
    std::uint32_t any = 0;
#pragma unroll
    for (int b = 0; b < Bits; ++b) {
      const bool set = ((bits >> b) & 1u) != 0;
#if defined(RELAY_GPU_HIP)
      if (__ballot(set) != 0) any |= 1u << b;
#else
      if (__any_sync(0xffffffffu, set)) any |= 1u << b;
#endif
    }
    if (threadIdx.x % warp_threads == 0) warps[threadIdx.x / warp_threads] = any;
  }

  // After the barrier: the OR of every thread's bits.
  __device__ std::uint32_t result() const {
    std::uint32_t any = 0;
#pragma unroll
    for (int w = 0; w < Block / warp_threads; ++w)
      any |= warps[w];
    return any;
  }
};

}  // namespace relay::gpu
