// Programmatic dependent launch (NVIDIA sm_90 and later): a kernel launched with
// gpu::rt::launch_early may be made resident before the kernel ahead of it on its stream has
// ended, once every block of that kernel has called allow_next_grid (or ended); the early kernel's
// wait_for_prior_grids then holds it until the kernel ahead has ended and its writes are visible.
// What this buys is the launch: the next kernel's blocks are scheduled, and its arguments loaded,
// while the kernel ahead finishes, rather than after.
//
// NVIDIA offers it from compute capability 9.0: the two instructions are compiled for sm_90 and
// later only, and are nothing in a kernel launched the ordinary way. AMD has no such launch: both
// are nothing there, and launch_early is an ordinary launch.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

// Waits until the kernel ahead on this kernel's stream has ended and its writes are visible. A
// kernel launched early calls it before it reads anything that kernel may write.
__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the kernel behind this one on its stream, where it was launched early, be made resident
// once every block of this kernel has called it. Called by every thread of a block, at one place:
// past it, this kernel must need nothing of any kernel not yet resident (the next kernel's blocks
// may take the room another rank's kernel would run in).
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace relay::gpu
