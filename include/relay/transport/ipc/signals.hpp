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
// Ordering. Every word a peer on another device writes (signal words, entry records and words,
// pull flags, its output's place) lies in a control block of its own allocation, which AMD keeps
// coherent while kernels run (uncached; ipc/memory.hpp), and is read with a system-scope atomic
// load: a poll of one word is an acquire load (signal_poll); where several words are read
// together (the pull form's entry words, loads in flight at once) they are relaxed loads
// (signal_peek) and the reader takes a system-scope acquire fence (signal_acquire) before it acts
// on them. A writer makes every store a peer will read visible first with a system-scope release
// fence (signal_release), then raises its mark (an atomic maximum) or stores its flag. On gfx942
// and gfx950 a system-scope load is `sc0 sc1`, the acquire `buffer_inv sc0 sc1` after it, and the
// release `buffer_wbl2 sc0 sc1` (LLVM's AMDGPUUsage, memory model GFX942; docs/amd.md gives the
// argument per read, and tests/gpu/transport/ipc/signal_isa.py checks the code objects). Where
// every rank of the job shares this device, NVIDIA orders at device scope (one memory system, a
// cheaper fence, acquire load and atomic); its relaxed loads and stores of words (signal_peek,
// signal_store) are at system scope always, which is never weaker: one instruction where choosing
// took two and a branch at every word of the ll kernel's polls. AMD always orders at system scope
// (one rule the code objects can be checked against). The loads are the compilers' atomic builtins
// and inline PTX rather than cuda::atomic_ref: the same code compiles under hipcc, which has no
// libcu++.
//
// Every wait polls with backoff (signal_backoff: s_sleep on AMD, __nanosleep on NVIDIA) once it
// has lasted a few polls, so that ranks sharing a device leave issue slots to the kernels they
// wait for, and every wait has the call's deadline.
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

// Whether data a peer made ready before a call (a registered input, which the pull form announces
// without a fence on NVIDIA) takes the writer's release and the reader's acquire all the same.
// On AMD it must: another device's lines may be stale in this device's L2, and the writer's
// own may still be dirty in its L2 (docs/amd.md). On NVIDIA a kernel's writes are visible to
// peers once it has ended.
#if defined(RELAY_GPU_HIP)
inline constexpr bool signal_fence_ready_data = true;
#else
inline constexpr bool signal_fence_ready_data = false;
#endif

// Whether a peer on another device may push into memory the caller allocated (a registered
// output). On NVIDIA it may. On AMD the caller's memory is coarse-grained, where another device's
// writes may stay hidden behind this device's L2 until its kernel ends (docs/amd.md): such an
// output is staged, written by the rank's own exit copy.
#if defined(RELAY_GPU_HIP)
inline constexpr bool peers_push_into_user_memory = false;
#else
inline constexpr bool peers_push_into_user_memory = true;
#endif

// Where AMD orders everything at system scope (see the top).
__device__ constexpr bool signal_system(bool system) {
#if defined(RELAY_GPU_HIP)
  (void)system;
  return true;
#else
  return system;
#endif
}

// A poll of a word a peer writes: an acquire load at system scope (`system`: some rank of the
// job is on another device), at device scope where every rank shares this device (NVIDIA only).
__device__ inline std::uint64_t signal_poll(const std::uint64_t* word, bool system) {
#if defined(RELAY_GPU_HIP)
  (void)system;
  return __hip_atomic_load(word, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  std::uint64_t v = 0;
  if (system)
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  else
    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
#endif
}

// A load of a word a peer writes with no ordering of its own: the loads of a group in flight at
// once, then signal_acquire before anything depends on them. At system scope always (the top says
// why).
__device__ inline std::uint64_t signal_peek(const std::uint64_t* word) {
#if defined(RELAY_GPU_HIP)
  return __hip_atomic_load(word, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  std::uint64_t v = 0;
  asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
#endif
}

// Fences. signal_release before the mark or flag that makes a peer read what this thread stored
// (every store before it visible first); signal_acquire after reads with no ordering of their own
// (signal_peek), before anything that depends on them. NVIDIA keeps the sequentially consistent
// fences it was measured with (__threadfence_system, __threadfence).
__device__ inline void signal_release(bool system) {
#if defined(RELAY_GPU_HIP)
  (void)system;
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "");
#else
  if (system)
    __threadfence_system();
  else
    __threadfence();
#endif
}
__device__ inline void signal_acquire(bool system) {
#if defined(RELAY_GPU_HIP)
  (void)system;
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "");
#else
  if (system)
    __threadfence_system();
  else
    __threadfence();
#endif
}

// Raises `word` to `value` (never lowers it), with no fence of its own: after signal_release,
// which makes every store of this thread before it visible first (one fence for the marks to
// every peer).
__device__ inline void signal_raise(std::uint64_t* word, std::uint64_t value, bool system) {
  if (signal_system(system))
    atomicMax_system(reinterpret_cast<unsigned long long*>(word),
                     static_cast<unsigned long long>(value));
  else
    atomicMax(reinterpret_cast<unsigned long long*>(word), static_cast<unsigned long long>(value));
}

// Stores a flag a peer polls (a pull flag, an entry word), after signal_release. At system scope
// always, as signal_peek.
__device__ inline void signal_store(std::uint64_t* word, std::uint64_t value) {
#if defined(RELAY_GPU_HIP)
  __hip_atomic_store(word, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
#endif
}

// A pause before the next poll of a wait that has lasted `polls` polls: none for the first 64
// (a mark usually lands within a few), then growing to about a microsecond.
__device__ inline void signal_backoff(std::uint32_t polls) {
  if (polls < 64) return;
  const std::uint32_t steps = polls < 1024 ? polls / 64 : 16;  // 1 to 16
#if defined(RELAY_GPU_HIP)
  for (std::uint32_t i = 0; i < steps; ++i)
    __builtin_amdgcn_s_sleep(1);  // 64 clocks each
#else
  __nanosleep(64u * steps);
#endif
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
