// The ipc transport's pull form (the rules: transport/ipc/pull_plan.hpp): a small allreduce in one
// kernel, whose blocks, each on its own,
//   1. enter: every block copies its tiles of the input into the staged input where the input
//      is not read in place; block 0 then announces the call (its record and its input's place
//      into every rank's control block, then its entry mark: the agreement of kernels.hpp), which
//      also says its own tiles are ready; every other block that copied tells each reader of this
//      rank's input that block b's part is ready (its flag in that reader's control block);
//   2. judge: every block waits for every peer's entry mark, reads its record and input place, and
//      judges all records, so nothing is read or written before every rank agreed (a refusing
//      rank, or one with another plan, never raises the flags waited for next);
//   3. wait for the ready flags of every member that staged its input (blocks 1.. of its grid: a
//      copy's tiles need not be a read's); a registered input was ready before the call began;
//   4. sum its tiles of the members' inputs, read where each member keeps it, into this rank's
//      output (always the caller's buffer: only this rank writes it);
//   5. tell each member that block b is done reading its input, and wait for every reader's
//      block b to say the same of this rank's, so that no input is written while a peer still
//      reads it once this kernel has ended (the next call's copy in, or the caller's stream).
// Per-block flags, no grid barrier: a call is two device-side round trips and the work. The call
// counter is advanced by block 0 once every block has read it (counted in at the start).
//
// Failures as in kernels.hpp: every flag wait also scans every peer's signal word, this rank's
// host flag and its deadline, and gives up the same way (a peer's abort or dead mark ends it).
// A block of a rank that has given up skips its work and its flags; its peers' waits see its abort
// mark. Timeouts name the peer and what it did not do ("enter call #n", "finish reading this
// rank's input in call #n").
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <cstdint>

#include "relay/gpu/kernels.hpp"
#include "relay/transport/ipc/kernels.hpp"
#include "relay/transport/ipc/pull_plan.hpp"

namespace relay::gpu {

// A rank's pull program, passed by value with every launch (built once per plan).
struct ipc_pull {
  // The sum against the staged places: the members' staged inputs here, this rank's staged
  // output; each moved per call by its delta (a member's published place, this rank's buffers).
  const void* src[max_reduce_inputs] = {};
  void* dst = nullptr;
  std::uint64_t count = 0;    // elements
  std::int32_t divisor = 1;   // AVG: A
  std::uint32_t members = 0;  // 0: this rank reads nothing (a helper, a group of count 0)
  std::uint32_t mine = 0;     // this rank's index among them
  std::uint32_t grid = 1;     // every active rank's grid
  std::uint16_t member[max_reduce_inputs] = {};
  std::uint64_t readers = 0;  // bit q: rank q reads this rank's input
};

// Every rank's control block as this process addresses it, passed by value: the kernel keeps
// them in shared memory, so that a store to a peer waits for no load of a pointer table.
struct ipc_peers {
  ipc_control* controls[max_ranks] = {};
};

namespace detail {

// Block 0's wall clock at trace point `point` (into `stamps`, shared), where the transport is built
// with RELAY_IPC_TRACE=1: issue 25's per-phase device times. They reach the host block
// (ipc::host_block::trace) at the kernel's end, so that no store to host memory is pending while
// the call runs (a fence would wait for it).
__device__ inline void ipc_pull_trace(std::uint64_t* stamps, int point) {
#if defined(RELAY_IPC_TRACE) && RELAY_IPC_TRACE
  if (blockIdx.x == 0 && threadIdx.x == 0) stamps[point] = wall_clock();
#else
  (void)stamps;
  (void)point;
#endif
}
__device__ inline void ipc_pull_trace_flush(const ipc_env& env, std::uint64_t call,
                                            const std::uint64_t* stamps) {
#if defined(RELAY_IPC_TRACE) && RELAY_IPC_TRACE
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (int i = 0; i < ipc::trace_points; ++i)
      *static_cast<volatile std::uint64_t*>(&env.host->trace[call % ipc::trace_calls][i]) =
          stamps[i];
#else
  (void)env;
  (void)call;
  (void)stamps;
#endif
}

// Step 1's and 5's flag: this block's word in every rank of `mask`, after every store and load of
// the block (the barrier, then one fence).
__device__ inline void ipc_pull_tell(const ipc_env& env, std::uint64_t mask, int which,
                                     std::uint64_t call) {
  __syncthreads();
  if (threadIdx.x < env.ranks && ((mask >> threadIdx.x) & 1) != 0) {
    signal_fence(env.system != 0);
    *static_cast<volatile std::uint64_t*>(
        &env.controls[threadIdx.x]->pull_flags[which][blockIdx.x][env.rank]) = call;
  }
}

// Step 4: this block's part of the sum, members in order, with the arithmetic of
// core/reduction.hpp (one rounding). `delta`: per member, then the output's. Vectors of 16 bytes
// where every delta is a multiple of 16 (the staged places are 256-byte aligned), else element
// by element.
template <class T, int Block>
__device__ inline void ipc_pull_sum(const ipc_pull& pl, const std::int64_t* delta, bool vector) {
  using R = reduction_traits<T>;
  using A = typename R::accumulator;
  auto source = [&](std::uint32_t k) {
    return reinterpret_cast<const T*>(static_cast<const unsigned char*>(pl.src[k]) + delta[k]);
  };
  T* out = reinterpret_cast<T*>(static_cast<unsigned char*>(pl.dst) + delta[pl.members]);
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * Block;
  const std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * Block + threadIdx.x;
  std::uint64_t tail = 0;  // elements before it went as vectors
  if (vector) {
    constexpr int E = 16 / sizeof(T);
    const std::uint64_t vectors = pl.count / E;
    for (std::uint64_t v = first; v < vectors; v += stride) {
      A acc[E];
      {
        const detail::vec16 x = reinterpret_cast<const detail::vec16*>(source(0))[v];
        const T* t = reinterpret_cast<const T*>(&x);
#pragma unroll
        for (int i = 0; i < E; ++i)
          acc[i] = R::load(t[i]);
      }
      for (std::uint32_t k = 1; k < pl.members; ++k) {
        const detail::vec16 x = reinterpret_cast<const detail::vec16*>(source(k))[v];
        const T* t = reinterpret_cast<const T*>(&x);
#pragma unroll
        for (int i = 0; i < E; ++i)
          acc[i] = R::add(acc[i], t[i]);
      }
      detail::vec16 y;
      T* t = reinterpret_cast<T*>(&y);
#pragma unroll
      for (int i = 0; i < E; ++i)
        t[i] = R::store(acc[i], pl.divisor);
      reinterpret_cast<detail::vec16*>(out)[v] = y;
    }
    tail = vectors * E;
  }
  for (std::uint64_t i = tail + first; i < pl.count; i += stride) {
    A acc = R::load(source(0)[i]);
    for (std::uint32_t k = 1; k < pl.members; ++k)
      acc = R::add(acc, source(k)[i]);
    out[i] = R::store(acc, pl.divisor);
  }
}

}  // namespace detail

template <class T>
__global__ void __launch_bounds__(ipc::pull_block_threads)
    ipc_pull_kernel(ipc_pull pl, ipc_peers peers, copy_desc in, std::uint64_t in_tiles,
                    ipc_env env) {
  constexpr int Block = ipc::pull_block_threads;
  __shared__ std::uint32_t give_up;
  __shared__ std::int64_t delta[max_reduce_inputs + 1];  // per member, then the output's
  __shared__ std::uint64_t places[max_ranks][2];         // each peer's input place
  __shared__ std::uint64_t registered[max_reduce_inputs][ipc::max_registrations];  // members'
  __shared__ std::int32_t index_of[max_ranks];  // a rank's index among the members, or -1
  __shared__ ipc_control* controls[max_ranks];
  __shared__ std::uint64_t* outbox[max_ranks];
  __shared__ detail::ipc_entry_shared entry;
  __shared__ std::uint64_t gave_up_in;  // this rank's sticky word when the kernel began
  __shared__ std::uint32_t missing;     // a wait of this block for a ready flag failed
  __shared__ std::uint64_t stamps[ipc::trace_points];
  for (std::uint32_t q = threadIdx.x; q < env.ranks; q += Block) {
    controls[q] = peers.controls[q];
    outbox[q] = q == env.rank ? nullptr : &peers.controls[q]->signal[env.rank];
    index_of[q] = -1;
  }
  // The members' registrations here, read now (off the path: a peer's input in place needs them).
  for (std::uint32_t i = threadIdx.x; i < pl.members * ipc::max_registrations; i += Block) {
    const std::uint32_t k = i / ipc::max_registrations, slot = i % ipc::max_registrations;
    if (k != pl.mine)
      registered[k][slot] = env.registrations[pl.member[k] * ipc::max_registrations + slot];
  }
  if (threadIdx.x == 0) {
    detail::ipc_pull_trace(stamps, 0);
    gave_up_in = detail::ipc_aborted(env);
    give_up = gave_up_in != 0 ? 1u : 0u;
    missing = 0;
    if (gridDim.x > 1) atomicAdd(&env.me->arrived, 1u);
  }
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  __syncthreads();
  if (threadIdx.x < pl.members) index_of[pl.member[threadIdx.x]] = static_cast<int>(threadIdx.x);
  env.controls = controls;
  env.outbox = outbox;
  const std::uint64_t self = env.in_place != 0 ? std::uint64_t{1} << env.rank : 0;
  // 1. This block's part of the input staged (where it is), then ready for its readers: block
  // 0's part by its entry mark (its announcement comes after the copy; the block barrier and the
  // announcement's fence order it), every other block's by its flag. In place, this rank waits for
  // its own copy too (every block's flag, block 0's included).
  if (give_up == 0)  // the same answer for every thread of the block (its barriers)
    for (std::uint64_t t = blockIdx.x; t < in_tiles; t += gridDim.x)
      copy_desc_tile<Block, 1, false>(in, t);
  if (blockIdx.x == 0) {
    __syncthreads();
    if (threadIdx.x == 0) detail::ipc_announce(env, call, gave_up_in);
    if (give_up == 0 && in_tiles > 0 && self != 0) detail::ipc_pull_tell(env, self, 0, call);
  } else if (give_up == 0 && in_tiles > 0) {
    detail::ipc_pull_tell(env, pl.readers | self, 0, call);
  }
  detail::ipc_pull_trace(stamps, 1);  // announced and (the same point) its part told
  detail::ipc_pull_trace(stamps, 2);
  // 2. The agreement; each member's input place read with its record, and the sum's operands
  // moved to where this call's buffers are (delta: per member, then the output's).
  if (threadIdx.x == 0 && pl.members > 0) {
    delta[pl.mine] = env.in_delta;
    delta[pl.members] = env.out_delta;
  }
  auto place_of = [&](std::uint32_t q) {
    const int k = index_of[q];
    if (k < 0) return;
    const volatile std::uint64_t* place = env.me->input_places[q];
    const std::uint64_t slot = place[0], offset = place[1];
    places[q][0] = slot;
    delta[k] = slot == 0 ? 0
                         : static_cast<std::int64_t>(registered[k][slot - 1] + offset -
                                                     reinterpret_cast<std::uintptr_t>(pl.src[k]));
  };
  bool stop = detail::ipc_judge_entries<Block>(env, call, give_up, entry, place_of,
                                               gave_up_in != 0 ? 1 : 0);
  detail::ipc_pull_trace(stamps, 3);
  // 3. The ready flags of every member that staged its input (this rank's own where its output
  // overwrites its input).
  if (!stop && pl.members > 0) {
    const std::uint32_t waits = pl.members * pl.grid;
    for (std::uint32_t i = threadIdx.x; i < waits; i += Block) {
      const std::uint32_t k = i / pl.grid, b = i % pl.grid;
      const std::uint32_t q = pl.member[k];
      const bool staged =
          q == env.rank ? env.in_place != 0 && in_tiles > 0 : places[q][0] == 0 && b > 0;
      if (!staged) continue;
      ipc_wait w;
      w.peer = q;
      if (!detail::ipc_wait_flag(env, &env.me->pull_flags[0][b][q], w, call)) missing = 1;
    }
    __syncthreads();
    stop = missing != 0;
  }
  detail::ipc_pull_trace(stamps, 4);
  // 4. The sum; 5. done reading: tell the members, then wait for this rank's readers.
  if (!stop && pl.members > 0) {
    bool vector = true;
    for (std::uint32_t k = 0; k <= pl.members; ++k)
      vector = vector && delta[k] % 16 == 0;
    detail::ipc_pull_sum<T, Block>(pl, delta, vector);
    detail::ipc_pull_trace(stamps, 5);
    std::uint64_t read = 0;
    for (std::uint32_t k = 0; k < pl.members; ++k)
      if (k != pl.mine) read |= std::uint64_t{1} << pl.member[k];
    detail::ipc_pull_tell(env, read, 1, call);
    detail::ipc_pull_trace(stamps, 6);
    if (threadIdx.x < env.ranks && ((pl.readers >> threadIdx.x) & 1) != 0) {
      ipc_wait w;
      w.peer = threadIdx.x;
      w.phase = 0;
      w.kind = ipc::wait_read;
      (void)detail::ipc_wait_flag(env, &env.me->pull_flags[1][blockIdx.x][threadIdx.x], w, call);
    }
  }
  // The end: block 0 advances the call counter once every block has read it, and publishes this
  // rank's abort mark where it gave up in this call (its entry mark went out at the start).
  __syncthreads();
  detail::ipc_pull_trace(stamps, 7);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (gridDim.x > 1) {
      while (*static_cast<volatile std::uint32_t*>(&env.me->arrived) < gridDim.x) {
      }
      env.me->arrived = 0;
    }
    *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
    // Where this block stopped: the rank gave up (its marks went out then, or it had given up
    // before and its announcement raised them); once more, as the plan's kernels do.
    if (stop)
      if (const std::uint64_t gave_up = detail::ipc_aborted(env); gave_up != 0)
        detail::ipc_raise_all(env, signal_mark(gave_up, signal_abort));
  }
  detail::ipc_pull_trace(stamps, 8);
  detail::ipc_pull_trace_flush(env, call, stamps);
}

}  // namespace relay::gpu
