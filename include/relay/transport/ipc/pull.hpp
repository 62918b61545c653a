// The ipc transport's pull form (the rules: transport/ipc/pull_plan.hpp): a small allreduce in one
// kernel, whose blocks, each on its own,
//   1. enter: block 0 announces the call (its record, its input's place, its entry mark: the
//      agreement of kernels.hpp, unchanged); every block copies its tiles of the input into the
//      staged input where the input is not read in place, then tells each reader of this rank's
//      input that block b's part is ready (its flag in that reader's control block);
//   2. judge: every block waits for every peer's entry mark and judges all records, so nothing is
//      read or written before every rank agreed (a refusing rank, or one with another plan, never
//      raises the flags waited for next);
//   3. wait for every member's ready flags (all its blocks: a copy's tiles need not be a read's);
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
  // The sum against the staged places (members' staged inputs here, this rank's staged output):
  // `fast` vectorized, valid when every operand's delta is a multiple of 16; `scalar` element by
  // element, for any delta.
  reduce_desc fast, scalar;
  std::uint64_t fast_tiles = 0, scalar_tiles = 0;
  std::uint32_t members = 0;  // 0: this rank reads nothing (a helper, a group of count 0)
  std::uint32_t mine = 0;     // this rank's index among them
  std::uint32_t grid = 1;     // every active rank's grid
  std::uint16_t member[max_reduce_inputs] = {};
  std::uint64_t readers = 0;  // bit q: rank q reads this rank's input
};

namespace detail {

// Step 5's and 1's flag: this block's word in every rank of `mask`, after every store and load of
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

}  // namespace detail

template <class T>
__global__ void __launch_bounds__(ipc::pull_block_threads)
    ipc_pull_kernel(ipc_pull pl, copy_desc in, std::uint64_t in_tiles, ipc_env env) {
  constexpr int Block = ipc::pull_block_threads;
  __shared__ std::uint32_t give_up;
  __shared__ std::int64_t delta[max_reduce_inputs + 1];  // per member, then the output's
  __shared__ std::uint32_t fast;
  __shared__ detail::ipc_entry_shared entry;
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  if (threadIdx.x == 0 && gridDim.x > 1) atomicAdd(&env.me->arrived, 1u);
  // 1. Enter, and make this block's part of the input ready for its readers.
  if (blockIdx.x == 0 && threadIdx.x == 0) detail::ipc_announce(env, call);
  if (threadIdx.x == 0) give_up = detail::ipc_aborted(env) != 0 ? 1u : 0u;
  __syncthreads();
  if (give_up == 0) {  // the same answer for every thread of the block (its barriers)
    for (std::uint64_t t = blockIdx.x; t < in_tiles; t += gridDim.x)
      copy_desc_tile<Block, 1, false>(in, t);
    const std::uint64_t self = env.in_place != 0 ? std::uint64_t{1} << env.rank : 0;
    detail::ipc_pull_tell(env, pl.readers | self, 0, call);
  }
  // 2. The agreement.
  bool stop = detail::ipc_judge_entries<Block>(env, call, give_up, entry);
  // 3. Every member's input ready (this rank's own too where its output overwrites its input).
  if (!stop && pl.members > 0) {
    const std::uint32_t waits = pl.members * pl.grid;
    for (std::uint32_t i = threadIdx.x; i < waits; i += Block) {
      const std::uint32_t k = i / pl.grid, b = i % pl.grid;
      const std::uint32_t q = pl.member[k];
      if ((q == env.rank && env.in_place == 0) || detail::ipc_aborted(env) != 0) continue;
      ipc_wait w;
      w.peer = q;
      detail::ipc_wait_flag(env, &env.me->pull_flags[0][b][q], w, call);
    }
    __syncthreads();
    if (threadIdx.x == 0) give_up = detail::ipc_aborted(env) != 0 ? 1u : 0u;
    __syncthreads();
    stop = give_up != 0;
  }
  // 4. The sum, its operands moved to where this call's buffers are.
  if (!stop && pl.members > 0) {
    if (threadIdx.x <= pl.members) {
      const std::uint32_t k = threadIdx.x;
      std::int64_t d = 0;
      if (k == pl.members) {
        d = env.out_delta;
      } else if (k == pl.mine) {
        d = env.in_delta;
      } else {
        const std::uint32_t q = pl.member[k];
        const volatile std::uint64_t* place = env.me->input_places[q];
        const std::uint64_t slot = place[0];
        if (slot != 0)
          d = static_cast<std::int64_t>(env.registrations[q * ipc::max_registrations + slot - 1] +
                                        place[1] -
                                        reinterpret_cast<std::uintptr_t>(pl.fast.src[k]));
      }
      delta[k] = d;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      std::uint32_t all = 1;
      for (std::uint32_t k = 0; k <= pl.members; ++k)
        all &= delta[k] % 16 == 0 ? 1u : 0u;
      fast = all;
    }
    __syncthreads();
    reduce_desc r = fast != 0 ? pl.fast : pl.scalar;
    const std::uint64_t tiles = fast != 0 ? pl.fast_tiles : pl.scalar_tiles;
    r.dst = static_cast<unsigned char*>(r.dst) + delta[pl.members];
    for (std::uint32_t k = 0; k < pl.members; ++k)
      r.src[k] = static_cast<const unsigned char*>(r.src[k]) + delta[k];
    for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x)
      reduce_desc_tile<T, Block, 1>(r, t);
    // 5. Done reading: tell the members, then wait for this rank's readers.
    std::uint64_t read = 0;
    for (std::uint32_t k = 0; k < pl.members; ++k)
      if (k != pl.mine) read |= std::uint64_t{1} << pl.member[k];
    detail::ipc_pull_tell(env, read, 1, call);
    if (threadIdx.x < env.ranks && ((pl.readers >> threadIdx.x) & 1) != 0 &&
        detail::ipc_aborted(env) == 0) {
      ipc_wait w;
      w.peer = threadIdx.x;
      w.phase = 0;
      w.kind = ipc::wait_read;
      detail::ipc_wait_flag(env, &env.me->pull_flags[1][blockIdx.x][threadIdx.x], w, call);
    }
  }
  // The end: block 0 advances the call counter once every block has read it, and publishes this
  // rank's abort mark where it gave up in this call (its entry mark went out at the start).
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (gridDim.x > 1) {
      while (*static_cast<volatile std::uint32_t*>(&env.me->arrived) < gridDim.x) {
      }
      env.me->arrived = 0;
    }
    *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
    if (const std::uint64_t gave_up = detail::ipc_aborted(env); gave_up != 0)
      detail::ipc_raise_all(env, signal_mark(gave_up, signal_abort));
  }
}

}  // namespace relay::gpu
