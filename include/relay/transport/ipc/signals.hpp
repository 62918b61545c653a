// Device-side signals between ranks: the only platform-specific device code of the ipc transport
// (transport/ipc/transport.hpp). A signal is a 64-bit word in a rank's registered memory that one
// peer writes and the owning rank polls; its value only grows (every store is an atomic maximum).
//
//   mark(call, done): call << 20 | done, done = 0 when the writer entered the call, phase + 1
//                     after it finished plan phase `phase`. A waiter satisfied by a mark of a
//                     later call is right to be: a rank enters call s + 1 only after finishing s.
//   abort mark:       call << 20 | 0xFFFFF: the writer gave up in that call (it timed out, a peer
//                     of its gave up, its agreement failed) and runs nothing more; every later
//                     abort mark it writes names the same call, so it never reads as "went on".
//   dead mark:        all ones, written by the host of a rank that leaves (abort()): greater than
//                     every mark, so no later store of that rank's kernels can hide it.
//
// Ordering. A writer makes its data stores visible before its mark with a fence
// (__threadfence_system, which is fence.sc.sys on NVIDIA and a release at system scope on AMD)
// and then an atomic maximum; a reader polls with volatile loads and fences once after it sees
// the mark, so that its later loads of the pushed data cannot be satisfied earlier. System scope
// where a peer is on another device (peer memory over NVLink or xGMI); device scope where every
// rank of the job shares this device (their memory system is one). Plain volatile loads, fences and
// the runtime's atomicMax_system rather than cuda::atomic_ref: the same code compiles under hipcc,
// which has no libcu++.
//
// Timeouts read a wall clock on the device: %globaltimer (nanoseconds) on NVIDIA, wall_clock64()
// (a constant-rate counter: hipDeviceAttributeWallClockRate kHz, 100 MHz on HIP 5) on AMD;
// ticks_per_ms converts.
//
// The mark rules (read_mark) are plain functions, compiled for the host too (unit-tested there);
// the rest needs nvcc or hipcc.
#pragma once

#include <cstdint>

#include "relay/core/config.hpp"

#if defined(__CUDACC__) || defined(__HIPCC__)
#include "relay/gpu/runtime.hpp"
#endif

namespace relay::ipc {

inline constexpr std::uint64_t signal_done_bits = 20;
inline constexpr std::uint64_t signal_abort = (std::uint64_t{1} << signal_done_bits) - 1;
inline constexpr std::uint64_t signal_dead = ~std::uint64_t{0};

RELAY_HOST_DEVICE constexpr std::uint64_t signal_mark(std::uint64_t call, std::uint64_t done) {
  return call << signal_done_bits | done;
}
RELAY_HOST_DEVICE constexpr bool signal_aborted(std::uint64_t mark) {
  return (mark & signal_abort) == signal_abort;
}
RELAY_HOST_DEVICE constexpr std::uint64_t signal_call(std::uint64_t mark) {
  return mark >> signal_done_bits;
}

// What a wait for mark `done` of call `call` learns from the peer's word `v`. For an entry wait
// (done 0), `entered` says whether the peer's entry record of this very call is in its slot: an
// abort mark of the call then still means the peer entered it (it gave up after publishing its
// record, e.g. on the verdict, which this rank reaches alone from the same records).
enum class mark_reading : unsigned char { waiting, reached, failed };
RELAY_HOST_DEVICE constexpr mark_reading read_mark(std::uint64_t v, std::uint64_t call,
                                                   std::uint64_t done, bool entered) {
  if (v == signal_dead) return mark_reading::failed;
  const std::uint64_t c = signal_call(v);
  if (c > call) return mark_reading::reached;  // it finished this call (an abort names the call)
  if (c < call) return signal_aborted(v) ? mark_reading::failed : mark_reading::waiting;
  if (!signal_aborted(v))
    return (v & signal_abort) >= done ? mark_reading::reached : mark_reading::waiting;
  return done == 0 && entered ? mark_reading::reached : mark_reading::failed;
}

// Whether a peer's word says it gave up in this call or before (a scan of every peer while
// waiting for one): its dead mark, an abort mark of an earlier call, or one of this call with
// an alarm (a verdict's abort, which carries none, is this rank's own verdict too).
RELAY_HOST_DEVICE constexpr bool peer_gave_up(std::uint64_t v, std::uint64_t call, bool alarmed) {
  if (v == signal_dead) return true;
  if (!signal_aborted(v)) return false;
  const std::uint64_t c = signal_call(v);
  return c < call || (c == call && alarmed);
}

#if defined(__CUDACC__) || defined(__HIPCC__)

// A poll of `word` (no ordering: spinning on it costs no fence); signal_acquire once the value
// read is acted on, so that nothing after it reads data older than the mark. `system`: some rank
// of the job is on another device (peer memory over NVLink or xGMI), so ordering must hold at
// system scope; where every rank shares this device its memory system orders all they see, and
// device scope suffices (a system-scope fence is the dearer one).
__device__ inline std::uint64_t signal_peek(const std::uint64_t* word) {
  return *static_cast<const volatile std::uint64_t*>(word);
}
__device__ inline void signal_fence(bool system) {
  if (system)
    __threadfence_system();
  else
    __threadfence();
}
__device__ inline void signal_acquire(bool system) {
  signal_fence(system);
}

// Raises `word` to `value` (never lowers it), with no fence of its own: after signal_release,
// which makes every store of this thread before it visible first (one fence for the marks to
// every peer).
__device__ inline void signal_release(bool system) {
  signal_fence(system);
}
__device__ inline void signal_raise(std::uint64_t* word, std::uint64_t value, bool system) {
  if (system)
    atomicMax_system(reinterpret_cast<unsigned long long*>(word),
                     static_cast<unsigned long long>(value));
  else
    atomicMax(reinterpret_cast<unsigned long long*>(word), static_cast<unsigned long long>(value));
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
inline gpu::rt::error_t ticks_per_ms(std::uint64_t* ticks, int device) {
#if defined(RELAY_GPU_HIP) && HIP_VERSION_MAJOR >= 6
  int khz = 0;
  const gpu::rt::error_t e = hipDeviceGetAttribute(&khz, hipDeviceAttributeWallClockRate, device);
  *ticks = static_cast<std::uint64_t>(khz > 0 ? khz : 1);
  return e;
#elif defined(RELAY_GPU_HIP)
  // HIP 5 has no attribute for it; gfx90a and gfx942 count at 100 MHz.
  (void)device;
  *ticks = 100'000;
  return gpu::rt::success;
#else
  (void)device;
  *ticks = 1'000'000;  // %globaltimer counts nanoseconds
  return gpu::rt::success;
#endif
}

#endif

}  // namespace relay::ipc
