// The step kernel's device trace (a build with RELAY_IPC_TRACE=1; nothing otherwise): per stage
// launch, when it began, when its waits were over, and for mesh emulation's paced pushes how its
// links were kept busy: the first slot's start and the last slot's finish, the time a link sat
// idle between two tiles of one walker (the link free, the walker not yet back to book), and the
// walkers' time moving tiles. It is what tells a stage that runs longer than its links' bytes
// allow where the time goes: in the waits before it, in links left idle between tiles (walkers
// slower than a slot), or after the last slot.
//
// The blocks gather a stage's numbers in this rank's control block (ipc_control::stage_trace:
// device memory, device-scope atomics), and the last block out writes them to the host block's
// trace rows (ipc::host_block::trace), where the host reads them after the calls
// (ipc_transport::device_trace). Every clock is the device clock of the link clocks
// (gpu::device_clock_ns): ranks on one device share it, so their rows line up.
#pragma once

#include <cstdint>

#include "relay/core/config.hpp"
#include "relay/transport/ipc/report.hpp"

#if defined(__CUDACC__) || defined(__HIPCC__)
#include "relay/gpu/link_clock.hpp"
#endif

namespace relay::ipc {

// The points of a stage's row (ipc::trace_points of them).
enum stage_point : int {
  stage_start = 0,      // block 0 began
  stage_waited = 1,     // block 0's waits were over (the entry's agreement included)
  stage_first = 2,      // the first paced slot's start (0: no paced push)
  stage_last = 3,       // the last paced slot's finish
  stage_idle = 4,       // ns links sat idle between two tiles of one walker, summed
  stage_tiles = 5,      // paced tiles moved
  stage_idle_most = 6,  // the longest such idle
  stage_moving = 7,     // ns walkers spent moving tiles (thread 0: from its wake to its next
                        // booking), summed
  stage_end = 8,        // the last block out, before its mark
};
static_assert(stage_end + 1 == trace_points);

// The host row of stage `index` (its place in the program: the entry 0, the exit last) of call
// `call`: 8 calls of up to 8 stages (a later stage shares the eighth's row).
inline constexpr int stage_trace_calls = 8, stage_trace_stages = 8;
static_assert(stage_trace_calls * stage_trace_stages == trace_calls);
RELAY_HOST_DEVICE constexpr int stage_trace_row(std::uint64_t call, std::uint32_t index) {
  return static_cast<int>(call % stage_trace_calls) * stage_trace_stages +
         static_cast<int>(index < stage_trace_stages - 1 ? index : stage_trace_stages - 1);
}

#if defined(RELAY_IPC_TRACE) && RELAY_IPC_TRACE
inline constexpr bool stage_tracing = true;
#else
inline constexpr bool stage_tracing = false;
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)

namespace detail {

// Thread 0's account of its block's walk (ipc_paced_pushes), kept in registers and added to the
// stage's numbers once, at the walk's end.
struct paced_tally {
  std::uint64_t first = ~0ull, last = 0, idle = 0, idle_most = 0, tiles = 0, moving = 0, woke = 0;
  // Before booking a tile: the move of the one before it is over (as far as thread 0 knows).
  __device__ void moved() {
    if (woke != 0) moving += gpu::device_clock_ns() - woke;
    woke = 0;
  }
  // A tile booked as `slot`, the link free since `freed`; a walker's first tile follows another
  // stage or walker, not its own, so the link's idle time before it is not the walker's.
  __device__ void booked(const gpu::link_slot& slot, std::uint64_t freed, bool walkers_first) {
    first = slot.start < first ? slot.start : first;
    last = slot.finish > last ? slot.finish : last;
    ++tiles;
    if (!walkers_first && slot.start > freed) {
      const std::uint64_t gap = slot.start - freed;
      idle += gap;
      idle_most = gap > idle_most ? gap : idle_most;
    }
  }
  __device__ void woken() { woke = gpu::device_clock_ns(); }
  // Into the stage's numbers (`stage`: ipc_control::stage_trace), device-scope atomics; the first
  // slot as its complement, so that a zeroed word is "none yet".
  __device__ void add_to(std::uint64_t* stage) {
    moved();
    if (tiles == 0) return;
    auto* w = reinterpret_cast<unsigned long long*>(stage);
    atomicMax(&w[stage_first], static_cast<unsigned long long>(~first));
    atomicMax(&w[stage_last], static_cast<unsigned long long>(last));
    atomicAdd(&w[stage_idle], static_cast<unsigned long long>(idle));
    atomicAdd(&w[stage_tiles], static_cast<unsigned long long>(tiles));
    atomicMax(&w[stage_idle_most], static_cast<unsigned long long>(idle_most));
    atomicAdd(&w[stage_moving], static_cast<unsigned long long>(moving));
  }
};

// Block 0's time at `point` (stage_start, stage_waited).
__device__ inline void stage_trace_mark(std::uint64_t* stage, int point) {
  if constexpr (stage_tracing)
    if (blockIdx.x == 0 && threadIdx.x == 0)
      *static_cast<volatile std::uint64_t*>(&stage[point]) = gpu::device_clock_ns();
}

// The last block out (after every block's numbers, which its acquire ordered): the stage's row to
// the host block's `row`, its end now, and the numbers cleared for the rank's next stage.
__device__ inline void stage_trace_flush(std::uint64_t* stage, std::uint64_t* row,
                                         std::uint64_t end) {
  if constexpr (stage_tracing) {
    volatile std::uint64_t* from = stage;
    volatile std::uint64_t* to = row;
    for (int i = 0; i < stage_end; ++i) {
      const std::uint64_t v = from[i];
      to[i] = i == stage_first && v != 0 ? ~v : v;
      from[i] = 0;
    }
    to[stage_end] = end;
  }
}

}  // namespace detail

#endif

}  // namespace relay::ipc
