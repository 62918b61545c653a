// Mesh emulation's link clock, the device side (gpu/link_pacing.hpp has the arithmetic and why):
// the device clock, waiting for it, and booking a link atomically against every other block that
// books it. The GPU executor's paced copy (exec/gpu/paced_copy.hpp) and the ipc transport's paced
// pushes (transport/ipc/kernels.hpp) both book links with these.
//
// Device clock: %globaltimer (ns) on NVIDIA; on AMD the wall clock (s_memrealtime), a constant
// 100 MHz on gfx9 (gfx90a, gfx942), so 10 ns a tick.
#pragma once

#include <cstdint>

#include "relay/gpu/link_pacing.hpp"
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
// block booking it), starting from `booked`, the clock as the caller read it (with the load its
// memory takes): retries with the clock it finds until no one booked in between. `freed`, where
// given, gets the clock the booking replaced: the time the link fell idle, when the slot starts
// later than that.
__device__ inline link_slot book_link_from(std::uint64_t* link, std::uint64_t booked,
                                           std::uint64_t ns, std::uint64_t* freed = nullptr) {
  auto* until = reinterpret_cast<unsigned long long*>(link);  // not `clock`: a device function
  for (;;) {
    const link_slot s = book_link(device_clock_ns(), booked, ns);
    const unsigned long long seen = atomicCAS(until, booked, s.finish);
    if (seen == booked) {
      if (freed != nullptr) *freed = booked;
      return s;
    }
    booked = seen;
  }
}

// book_link_from with the clock read by a device-scope atomic: a clock in device memory that only
// this device's blocks book (the GPU executor's).
__device__ inline link_slot book_link_atomic(std::uint64_t* link, std::uint64_t ns) {
  return book_link_from(link, atomicAdd(reinterpret_cast<unsigned long long*>(link), 0ull), ns);
}

}  // namespace relay::gpu
