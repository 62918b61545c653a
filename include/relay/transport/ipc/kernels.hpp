// The ipc transport's device side (ipc/transport.hpp). A call of a rank is a sequence of stages:
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
//      word for this rank (ipc/signals.hpp) and, on the entry stage, advances the call counter.
//
// User memory (transport/ipc/direct.hpp). The lists are built once per plan against the staged
// places in the registered areas. A call whose input or output stays in the caller's buffer
// moves the operands that name them by a delta: this rank's own input and output deltas come
// with the launch (ipc_env); a peer's output delta is read, after the stage's waits, from where
// that peer's entry wrote it (its control block: registration slot and offset), and turned into
// an address through this process's table of the peers' registrations. Descriptors whose
// operands never move carry no tags and run exactly as before.
//
// The fp8 wire (plan/slice.hpp, fp8_ends::receiver). A stage may also hold fp8 ends
// (gpu/fp8_kernels.hpp's tile functions): in a phase, the sender quantizes each copy's source
// straight into the receiver's wire slot, so only the image crosses the link; in the phase's
// arrival, a stage of its own with its own mark, the receiver dequantizes the images that landed
// in its slots. Those stages run ipc_step_kernel's Fp8 form, so that the native stages keep the
// registers (and occupancy) they had.

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
#include <type_traits>

#include "relay/core/wire.hpp"
#include "relay/gpu/fp8_kernels.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/transport/ipc/direct.hpp"
#include "relay/transport/ipc/signals.hpp"

namespace relay::gpu {

// What a wait names, for a report: a phase of either kind, or a phase's fp8 arrivals.
enum ipc_wait_kind : std::uint32_t { ipc_transfer = 0, ipc_reduce = 1, ipc_arrival = 2 };

// One slice_wait, with what a report needs to name it.
struct ipc_wait {
  std::uint32_t peer = 0;
  std::int32_t phase = -1;  // plan phase; -1 (call_entry): the peer entered the call
  std::uint32_t step = 0;
  std::uint32_t kind = ipc_transfer;
  std::uint64_t done = 0;  // the peer's mark that satisfies it (slice_mark)
};

// Which delta moves each operand of a descriptor: ipc::operand_tag (0: none; 1, 2: this rank's
// input, output; 3 + q: peer q's output).
struct ipc_copy_tags {
  std::uint8_t src = 0, dst = 0;
};
struct ipc_reduce_tags {
  std::uint8_t dst = 0;
  std::uint8_t src[max_reduce_inputs] = {};
};
inline constexpr int ipc_delta_count = 3 + max_ranks;

// One launch's work, in device memory (built once per plan, ipc/transport.hpp).
struct ipc_stage {
  const ipc_wait* waits = nullptr;
  const copy_desc* copies = nullptr;
  const reduce_desc* reduces = nullptr;
  std::uint32_t wait_count = 0, copy_count = 0, reduce_count = 0;
  std::uint32_t enter = 0;    // 1: this launch begins a call (advance the call counter)
  std::int32_t publish = -1;  // the mark's `done` when finished (0: entered, phase + 1); -1: none
  std::uint64_t copy_tiles = 0, reduce_tiles = 0;
  // Null where no operand of the list has a tag (nothing moves: the lists run as built).
  const ipc_copy_tags* copy_tags = nullptr;
  const ipc_reduce_tags* reduce_tags = nullptr;
  const std::uint64_t* peer_out = nullptr;  // [ranks]: rank q's staged output (this plan), here
  std::uint64_t push_mask = 0;              // bit q: a copy of the stage writes peer q's output
  // fp8 ends (see the top): [0] of the plan's element type, [1] of float partial sums; all
  // quantizes (a phase's pushes) or all dequantizes (its arrivals), in `fp8_format`.
  const fp8_desc* fp8[2] = {nullptr, nullptr};
  std::uint32_t fp8_count[2] = {0, 0};
  std::uint64_t fp8_tiles[2] = {0, 0};
  std::uint32_t fp8_dequantize = 0;
  std::uint32_t fp8_format = 0;  // relay::fp8_format
};

// The start of every rank's registered area. signal[q] is written by rank q only (its latest
// mark); the rest by this rank's own launches only.
struct ipc_control {
  std::uint64_t signal[max_ranks];
  std::uint64_t call;        // calls entered
  std::uint32_t arrived;     // blocks of the running stage that are done (reset by the last)
  std::uint32_t aborted;     // non-zero once this rank gave up; never cleared
  std::uint32_t generation;  // the one-shot kernel's grid barrier: stages passed, ever
  // Where this rank's output of its current call is (ipc_env::out_slot, out_offset), written by
  // its entry before it publishes "entered"; peers read it after waiting for that.
  std::uint64_t out_slot;
  std::uint64_t out_offset;
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
  std::uint32_t kind = ipc_transfer;
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
  std::uint64_t timeout_ticks = 0;         // of wall_clock()
  ipc_control* const* controls = nullptr;  // [ranks]: rank q's control block, in this process
  // [ranks][ipc::max_registrations]: where rank q's registered allocation starts in this process
  // (0: no registration in that slot).
  const std::uint64_t* registrations = nullptr;
  // This call's places: deltas from the staged input and output to the caller's buffers (0 when
  // staged), and the output's registration slot + 1 (0: staged) and its offset from that
  // allocation's start, which the entry publishes.
  std::int64_t in_delta = 0, out_delta = 0;
  std::uint64_t out_slot = 0, out_offset = 0;
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
  r->kind = w.kind;
  r->call = call;
  __threadfence_system();
  r->code = code;
}

__device__ inline bool ipc_aborted(const ipc_env& env) {
  return *static_cast<volatile std::uint32_t*>(&env.me->aborted) != 0;
}

// Polls until the peer's mark reaches `target`, the peer aborts, this rank aborts, or the timeout.
__device__ inline void ipc_wait_for(const ipc_env& env, const ipc_wait& w, std::uint64_t call) {
  const std::uint64_t target = signal_mark(call, w.done);
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

// After the stage's waits, every thread of the block: the delta of each tag into `delta`
// (shared). A peer's output place is read only for the peers the stage pushes into, whose entry
// into this call the slice's waits have seen by now (in this stage or an earlier one), so the
// place is this call's: the peer writes the next call's only after its exit, which waits for this
// stage's pushes.
template <int Block>
__device__ inline void ipc_stage_deltas(const ipc_env& env, const ipc_stage& s,
                                        std::int64_t* delta) {
  if (s.copy_tags == nullptr && s.reduce_tags == nullptr) return;
  for (std::uint32_t i = threadIdx.x; i < 3 + env.ranks; i += Block) {
    std::int64_t d = 0;
    if (i == ipc::tag_my_input) {
      d = env.in_delta;
    } else if (i == ipc::tag_my_output) {
      d = env.out_delta;
    } else if (i >= ipc::tag_peer_output && ((s.push_mask >> (i - ipc::tag_peer_output)) & 1)) {
      const std::uint32_t q = i - ipc::tag_peer_output;
      const volatile ipc_control* c = env.controls[q];
      const std::uint64_t slot = c->out_slot;
      if (slot != 0) {
        const std::uint64_t start = env.registrations[q * ipc::max_registrations + slot - 1];
        d = static_cast<std::int64_t>(start + c->out_offset - s.peer_out[q]);
      }
    }
    delta[i] = d;
  }
  __syncthreads();
}

template <int Block, int Unroll>
__device__ inline void ipc_moved_copy_tile(const ipc_stage& s, std::uint64_t t,
                                           const std::int64_t* delta) {
  const std::uint32_t i = find_desc(s.copies, s.copy_count, t);
  copy_desc c = s.copies[i];
  const ipc_copy_tags g = s.copy_tags[i];
  c.src += delta[g.src];
  c.dst += delta[g.dst];
  copy_desc_tile<Block, Unroll, false>(c, t - c.first_tile);
}

template <class T, int Block, int Unroll>
__device__ inline void ipc_moved_reduce_tile(const ipc_stage& s, std::uint64_t t,
                                             const std::int64_t* delta) {
  const std::uint32_t i = find_desc(s.reduces, s.reduce_count, t);
  reduce_desc r = s.reduces[i];
  const ipc_reduce_tags& g = s.reduce_tags[i];
  r.dst = static_cast<unsigned char*>(r.dst) + delta[g.dst];
  for (int k = 0; k < r.k; ++k)
    r.src[k] = static_cast<const unsigned char*>(r.src[k]) + delta[g.src[k]];
  reduce_desc_tile<T, Block, Unroll>(r, t - r.first_tile);
}

template <class E, fp8_format F>
__device__ inline void ipc_fp8_end(const fp8_desc& d, bool dequantize, std::uint64_t tile) {
  if (dequantize)
    fp8_dequantize_tile<E, F, fp8_conversion::fast, false, fp8_unroll>(
        static_cast<const unsigned char*>(d.src), d.count, static_cast<E*>(d.dst), nullptr, tile);
  else
    fp8_quantize_tile<E, F, fp8_conversion::fast, fp8_unroll>(
        static_cast<const E*>(d.src), static_cast<unsigned char*>(d.dst), d.count, tile);
}

// Tile t of the stage's fp8 list w: E is T for list 0, float (partial sums) for list 1.
template <class T>
__device__ inline void ipc_fp8_tile(const ipc_stage& s, int w, std::uint64_t t) {
  const fp8_desc& d = s.fp8[w][find_desc(s.fp8[w], s.fp8_count[w], t)];
  const bool deq = s.fp8_dequantize != 0;
  const bool ocp = s.fp8_format == static_cast<std::uint32_t>(fp8_format::e4m3);
  constexpr fp8_format e4m3 = fp8_format::e4m3, fnuz = fp8_format::e4m3_fnuz;
  const std::uint64_t tile = t - d.first_tile;
  if (w == 0 && ocp)
    ipc_fp8_end<T, e4m3>(d, deq, tile);
  else if (w == 0)
    ipc_fp8_end<T, fnuz>(d, deq, tile);
  else if (ocp)
    ipc_fp8_end<float, e4m3>(d, deq, tile);
  else
    ipc_fp8_end<float, fnuz>(d, deq, tile);
}

// This block's tiles of a stage: the user copy, then the copy list, then the reduction list,
// then (Fp8) the fp8 lists.
template <class T, int Block, int Unroll, bool Fp8 = false>
__device__ inline void ipc_stage_work(const ipc_stage& s, const copy_desc& user,
                                      std::uint64_t user_tiles, const std::int64_t* delta) {
  const std::uint64_t lists = user_tiles + s.copy_tiles;
  const std::uint64_t reduced = lists + s.reduce_tiles;
  const std::uint64_t total = Fp8 ? reduced + s.fp8_tiles[0] + s.fp8_tiles[1] : reduced;
  for (std::uint64_t t = blockIdx.x; t < total; t += gridDim.x) {
    if constexpr (Fp8 && fp8_wire_type<T>) {
      static_assert(Block == fp8_block_threads, "the fp8 tiles assume their own block size");
      if (t >= reduced) {
        const std::uint64_t f = t - reduced;
        if (f < s.fp8_tiles[0])
          ipc_fp8_tile<T>(s, 0, f);
        else
          ipc_fp8_tile<T>(s, 1, f - s.fp8_tiles[0]);
        continue;
      }
    }
    if (t < user_tiles)
      copy_desc_tile<Block, Unroll, false>(user, t);
    else if (t < lists && s.copy_tags != nullptr)
      ipc_moved_copy_tile<Block, Unroll>(s, t - user_tiles, delta);
    else if (t < lists)
      copy_list_tile<Block, Unroll, false>(s.copies, s.copy_count, t - user_tiles);
    else if (s.reduce_tags != nullptr)
      ipc_moved_reduce_tile<T, Block, Unroll>(s, t - lists, delta);
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
  if (s.enter != 0) {
    *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
    *static_cast<volatile std::uint64_t*>(&env.me->out_slot) = env.out_slot;
    *static_cast<volatile std::uint64_t*>(&env.me->out_offset) = env.out_offset;
  }
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
// rank's buffers were refused, so it gives up at once (entry stage only). Fp8: the stage has fp8
// ends (launched for T of an fp8 wire only).
template <class T, int Block = default_block, int Unroll = default_unroll, bool Fp8 = false>
__global__ void __launch_bounds__(Block)
    ipc_step_kernel(const ipc_stage* stage, copy_desc user, std::uint64_t user_tiles, ipc_env env,
                    std::uint32_t refuse) {
  __shared__ std::uint32_t give_up;
  __shared__ std::int64_t delta[ipc_delta_count];
  const ipc_stage s = *stage;
  // Every block reads the counter before the last block of an entry launch advances it.
  const std::uint64_t call =
      *static_cast<volatile std::uint64_t*>(&env.me->call) + (s.enter != 0 ? 1 : 0);
  if (refuse != 0 && blockIdx.x == 0 && threadIdx.x == 0)
    detail::ipc_give_up(env, ipc_refused, ipc_wait{}, call);
  if (!detail::ipc_stage_waits<Block>(env, s, call, give_up)) {
    detail::ipc_stage_deltas<Block>(env, s, delta);
    detail::ipc_stage_work<T, Block, Unroll, Fp8>(s, user, user_tiles, delta);
  }
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
  __shared__ std::int64_t delta[ipc_delta_count];
  volatile std::uint32_t* generation = &env.me->generation;
  std::uint32_t seen = *generation;  // read by every block before the first barrier moves it
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  for (std::uint32_t i = 0; i < count; ++i) {
    const ipc_stage s = stages[i];
    if (!detail::ipc_stage_waits<Block>(env, s, call, give_up)) {
      detail::ipc_stage_deltas<Block>(env, s, delta);
      if (i == 0)
        detail::ipc_stage_work<T, Block, Unroll>(s, in, in_tiles, delta);
      else if (i + 1 == count)
        detail::ipc_stage_work<T, Block, Unroll>(s, out, out_tiles, delta);
      else
        detail::ipc_stage_work<T, Block, Unroll>(s, copy_desc{}, 0, delta);
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
