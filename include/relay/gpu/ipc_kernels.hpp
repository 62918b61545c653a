// The ipc transport's device side (transport/ipc.hpp). A call of a rank is a sequence of stages:
// the entry (the copy of the user's input into the rank's registered area), one per phase of the
// rank's slice in which it issues operations (its pushes into peers' memory, or its reductions),
// and the exit (the copy of the output back to the user's buffer). Stepped form: one launch of
// ipc_step_kernel per stage. One-shot form (small calls): one launch of ipc_one_shot_kernel for
// all of them, its blocks meeting at a grid barrier between stages. Each stage
//
//   1. waits for the stage's signals (slice_wait: a peer entered the call or finished a phase),
//      one thread per wait in every block, polling the rank's own copy of that peer's word;
//   2. walks the stage's tiles: the user copy, then the copy list, then the reduction list, with
//      the batched kernels' tile functions (gpu/kernels.hpp), so the work is theirs exactly;
//   3. counts its blocks out; the last one publishes the stage's mark into every peer's signal
//      word for this rank (gpu/signals.hpp) and, on the entry stage, advances the call counter.

// The call counter lives in the rank's control block in device memory, never in an argument:
// a captured graph replays the same arguments, and the counter still tells its calls apart.
//
// Failure. A wait that outlasts the timeout, or that finds its peer's abort mark, records what
// it waited for in the report (host memory mapped into the device, so the host reads it without
// synchronizing) and sets the rank's sticky `aborted` word. From then on every launch of this
// rank skips its work, user memory included, and publishes abort marks instead of progress, so
// that every peer waiting on this rank stops at once with a report naming it. Nothing spins
// forever: a dead peer costs one timeout.
#pragma once

#include <cstdint>

#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/gpu/signals.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay::gpu {

// One slice_wait, with what a report needs to name it.
struct ipc_wait {
  std::uint32_t peer = 0;
  std::int32_t phase = -1;  // plan phase; -1 (call_entry): the peer entered the call
  std::uint32_t step = 0;
  std::uint32_t reduce = 0;  // the phase's kind: 0 transfer, 1 reduce
};

// One launch's work, in device memory (built once per plan, transport/ipc.hpp).
struct ipc_stage {
  const ipc_wait* waits = nullptr;
  const copy_desc* copies = nullptr;
  const reduce_desc* reduces = nullptr;
  std::uint32_t wait_count = 0, copy_count = 0, reduce_count = 0;
  std::uint32_t enter = 0;    // 1: this launch begins a call (advance the call counter)
  std::int32_t publish = -1;  // the mark's `done` when finished (0: entered, phase + 1); -1: none
  std::uint64_t copy_tiles = 0, reduce_tiles = 0;
};

// The start of every rank's registered area. signal[q] is written by rank q only (its latest
// mark); the rest by this rank's own launches only.
struct ipc_control {
  std::uint64_t signal[max_ranks];
  std::uint64_t call;        // calls entered
  std::uint32_t arrived;     // blocks of the running stage that are done (reset by the last)
  std::uint32_t aborted;     // non-zero once this rank gave up; never cleared
  std::uint32_t generation;  // the one-shot kernel's grid barrier: stages passed, ever
};

enum ipc_report_code : std::uint32_t {
  ipc_ok = 0,
  ipc_timed_out = 1,     // a wait outlasted the timeout
  ipc_peer_aborted = 2,  // a peer published an abort mark
  ipc_refused = 3,       // this rank's own buffers were refused; it ran nothing
};

// What the host learns after the fact: the first reason this rank gave up. `code` is written
// last, after a system fence, so a reader that sees it non-zero sees the rest.
struct ipc_report {
  std::uint32_t code = ipc_ok;
  std::uint32_t peer = 0;
  std::int32_t phase = -1;
  std::uint32_t step = 0;
  std::uint32_t reduce = 0;
  std::uint32_t pad = 0;
  std::uint64_t call = 0;
};

// A rank's fixed view of the job, passed by value to every launch.
struct ipc_env {
  ipc_control* me = nullptr;
  std::uint64_t* const* outbox = nullptr;  // [ranks]: &signal[this rank] in peer q's area; null
                                           // for this rank
  ipc_report* report = nullptr;            // device address of the mapped host report
  std::uint32_t ranks = 0;
  std::uint64_t timeout_ticks = 0;  // of wall_clock()
};

namespace detail {

// The first reason wins; later ones only see `aborted` set.
__device__ inline void ipc_give_up(const ipc_env& env, std::uint32_t code, const ipc_wait& w,
                                   std::uint64_t call) {
  if (atomicCAS(&env.me->aborted, 0u, 1u) != 0u) return;
  volatile ipc_report* r = env.report;
  r->peer = w.peer;
  r->phase = w.phase;
  r->step = w.step;
  r->reduce = w.reduce;
  r->call = call;
  __threadfence_system();
  r->code = code;
}

__device__ inline bool ipc_aborted(const ipc_env& env) {
  return *static_cast<volatile std::uint32_t*>(&env.me->aborted) != 0;
}

// Polls until the peer's mark reaches `target`, the peer aborts, this rank aborts, or the timeout.
__device__ inline void ipc_wait_for(const ipc_env& env, const ipc_wait& w, std::uint64_t call) {
  const std::uint64_t target = signal_mark(call, static_cast<std::uint64_t>(w.phase + 1));
  const std::uint64_t* word = &env.me->signal[w.peer];
  const std::uint64_t start = wall_clock();
  for (;;) {
    const std::uint64_t v = signal_load(word);
    if (signal_aborted(v)) return ipc_give_up(env, ipc_peer_aborted, w, call);
    if (v >= target || ipc_aborted(env)) return;
    if (wall_clock() - start > env.timeout_ticks) return ipc_give_up(env, ipc_timed_out, w, call);
  }
}

}  // namespace detail

namespace detail {

// This block's part of a stage before its work: every wait (one thread each), then whether the
// rank has given up, the same answer for every thread of the block.
template <int Block>
__device__ inline bool ipc_stage_waits(const ipc_env& env, const ipc_stage& s, std::uint64_t call,
                                       std::uint32_t& give_up) {
  for (std::uint32_t i = threadIdx.x; i < s.wait_count; i += Block)
    if (!ipc_aborted(env)) ipc_wait_for(env, s.waits[i], call);
  __syncthreads();
  if (threadIdx.x == 0) give_up = ipc_aborted(env) ? 1u : 0u;
  __syncthreads();
  return give_up != 0;
}

// This block's tiles of a stage: the user copy, then the copy list, then the reduction list.
template <class T, int Block, int Unroll>
__device__ inline void ipc_stage_work(const ipc_stage& s, const copy_desc& user,
                                      std::uint64_t user_tiles) {
  const std::uint64_t lists = user_tiles + s.copy_tiles;
  const std::uint64_t total = lists + s.reduce_tiles;
  for (std::uint64_t t = blockIdx.x; t < total; t += gridDim.x) {
    if (t < user_tiles)
      copy_desc_tile<Block, Unroll, false>(user, t);
    else if (t < lists)
      copy_list_tile<Block, Unroll, false>(s.copies, s.copy_count, t - user_tiles);
    else
      reduce_list_tile<T, Block, Unroll>(s.reduces, s.reduce_count, t - lists);
  }
}

// Counts this block out of the stage (after all its threads' stores, into peers' memory too);
// true in thread 0 of the last block, once every block's work is done.
__device__ inline bool ipc_last_out(const ipc_env& env) {
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x != 0) return false;
  if (atomicAdd(&env.me->arrived, 1u) != gridDim.x - 1) return false;
  __threadfence_system();
  env.me->arrived = 0;  // for the next stage (a later launch, or after the grid barrier)
  return true;
}

// The last block's epilogue of a stage: the call counter on entry, then the mark to every peer
// (an abort mark once this rank has given up).
__device__ inline void ipc_publish(const ipc_env& env, const ipc_stage& s, std::uint64_t call) {
  if (s.enter != 0) *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
  const bool aborted = ipc_aborted(env);
  if (!aborted && s.publish < 0) return;
  const std::uint64_t mark =
      signal_mark(call, aborted ? signal_abort : static_cast<std::uint64_t>(s.publish));
  for (std::uint32_t q = 0; q < env.ranks; ++q)
    if (env.outbox[q] != nullptr) signal_store(env.outbox[q], mark);
}

}  // namespace detail

// One stage of a call (see the top of this file). `user` is the entry's or the exit's copy
// between the user's buffer and the registered area (user_tiles = 0: none); `refuse`: this
// rank's buffers were refused, so it gives up at once (entry stage only).
template <class T, int Block = default_block, int Unroll = default_unroll>
__global__ void __launch_bounds__(Block)
    ipc_step_kernel(const ipc_stage* stage, copy_desc user, std::uint64_t user_tiles, ipc_env env,
                    std::uint32_t refuse) {
  __shared__ std::uint32_t give_up;
  const ipc_stage s = *stage;
  // Every block reads the counter before the last block of an entry launch advances it.
  const std::uint64_t call =
      *static_cast<volatile std::uint64_t*>(&env.me->call) + (s.enter != 0 ? 1 : 0);
  if (refuse != 0 && blockIdx.x == 0 && threadIdx.x == 0)
    detail::ipc_give_up(env, ipc_refused, ipc_wait{}, call);
  if (!detail::ipc_stage_waits<Block>(env, s, call, give_up))
    detail::ipc_stage_work<T, Block, Unroll>(s, user, user_tiles);
  if (detail::ipc_last_out(env)) detail::ipc_publish(env, s, call);
}

// The one-shot form: a whole call (stages[0] the entry, stages[count - 1] the exit) in one
// launch, for small calls where launches cost more than the work. Between stages the blocks meet
// at a grid barrier (the last one in publishes the stage's mark and advances the barrier's
// generation; the others spin on it), so every block must be resident at once: the host keeps
// the grid within one block per multiprocessor.
template <class T, int Block = default_block, int Unroll = default_unroll>
__global__ void __launch_bounds__(Block)
    ipc_one_shot_kernel(const ipc_stage* stages, std::uint32_t count, copy_desc in,
                        std::uint64_t in_tiles, copy_desc out, std::uint64_t out_tiles,
                        ipc_env env) {
  __shared__ std::uint32_t give_up;
  volatile std::uint32_t* generation = &env.me->generation;
  std::uint32_t seen = *generation;  // read by every block before the first barrier moves it
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  for (std::uint32_t i = 0; i < count; ++i) {
    const ipc_stage s = stages[i];
    if (!detail::ipc_stage_waits<Block>(env, s, call, give_up)) {
      if (i == 0)
        detail::ipc_stage_work<T, Block, Unroll>(s, in, in_tiles);
      else if (i + 1 == count)
        detail::ipc_stage_work<T, Block, Unroll>(s, out, out_tiles);
      else
        detail::ipc_stage_work<T, Block, Unroll>(s, copy_desc{}, 0);
    }
    if (detail::ipc_last_out(env)) {
      detail::ipc_publish(env, s, call);
      __threadfence();
      *generation = seen + 1;
    } else if (threadIdx.x == 0) {
      while (*generation == seen) {
      }
      __threadfence();
    }
    ++seen;
    __syncthreads();
  }
}

}  // namespace relay::gpu
