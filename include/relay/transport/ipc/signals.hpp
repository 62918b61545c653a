// Device-side signals between ranks: the only platform-specific device code of the ipc transport
// (ipc/transport.hpp). A signal is a 64-bit word in a rank's registered memory that one peer
// writes and the owning rank polls; its value only grows.
//
//   mark(call, done): call << 20 | done, done = 0 when the writer entered the call, phase + 1
//                     after it finished plan phase `phase`. A waiter satisfied by a mark of a
//                     later call is right to be: a rank enters call s + 1 only after finishing s.
//   abort mark:       call << 20 | 0xFFFFF: the writer gave up on that call (it timed out, a peer
//                     of its aborted, or its own buffers were refused) and runs nothing more.
//
// Ordering. A writer makes its data stores visible before its mark with a system-scope fence
// (__threadfence_system, which is fence.sc.sys on NVIDIA and a release at system scope on AMD)
// and then a volatile store; a reader polls with volatile loads and fences again after it sees
// the mark, so that its later loads of the pushed data cannot be satisfied earlier. System scope
// because the peers are other processes, possibly on other devices (peer memory over NVLink or
// xGMI). Plain volatile accesses plus fences rather than cuda::atomic_ref: the same code compiles
// under hipcc, which has no libcu++.
//
// Timeouts read a wall clock on the device: %globaltimer (nanoseconds) on NVIDIA, wall_clock64()
// (a constant-rate counter: hipDeviceAttributeWallClockRate kHz, 100 MHz on HIP 5) on AMD;
// ticks_per_ms converts.
#pragma once

#include <cstdint>

#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

inline constexpr std::uint64_t signal_done_bits = 20;
inline constexpr std::uint64_t signal_abort = (std::uint64_t{1} << signal_done_bits) - 1;

__host__ __device__ constexpr std::uint64_t signal_mark(std::uint64_t call, std::uint64_t done) {
  return call << signal_done_bits | done;
}
__host__ __device__ constexpr bool signal_aborted(std::uint64_t mark) {
  return (mark & signal_abort) == signal_abort;
}
__host__ __device__ constexpr std::uint64_t signal_call(std::uint64_t mark) {
  return mark >> signal_done_bits;
}

__device__ inline std::uint64_t signal_load(const std::uint64_t* word) {
  const std::uint64_t v = *static_cast<const volatile std::uint64_t*>(word);
  __threadfence_system();  // acquire: nothing after this reads data older than the mark
  return v;
}

__device__ inline void signal_store(std::uint64_t* word, std::uint64_t value) {
  __threadfence_system();  // release: every store of this thread before it is visible first
  *static_cast<volatile std::uint64_t*>(word) = value;
}

// The device's wall clock, in the ticks of ticks_per_ms.
__device__ inline std::uint64_t wall_clock() {
#if defined(RELAY_GPU_HIP) && defined(__HIP_DEVICE_COMPILE__)
  return static_cast<std::uint64_t>(wall_clock64());
#elif defined(RELAY_GPU_HIP)
  return 0;  // hipcc's host pass, which declares no wall_clock64; never called on the host
#else
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

// Ticks of wall_clock() per millisecond on `device`.
inline rt::error_t ticks_per_ms(std::uint64_t* ticks, int device) {
#if defined(RELAY_GPU_HIP) && HIP_VERSION_MAJOR >= 6
  int khz = 0;
  const rt::error_t e = hipDeviceGetAttribute(&khz, hipDeviceAttributeWallClockRate, device);
  *ticks = static_cast<std::uint64_t>(khz > 0 ? khz : 1);
  return e;
#elif defined(RELAY_GPU_HIP)
  // HIP 5 has no attribute for it; gfx90a and gfx942 count at 100 MHz.
  (void)device;
  *ticks = 100'000;
  return rt::success;
#else
  (void)device;
  *ticks = 1'000'000;  // %globaltimer counts nanoseconds
  return rt::success;
#endif
}

}  // namespace relay::gpu
