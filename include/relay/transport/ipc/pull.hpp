// The ipc transport's pull form (the rules: transport/ipc/pull_plan.hpp): a small allreduce in one
// kernel, whose blocks, each on its own,
//   1. enter: every block copies its tiles of the input into the staged input where the input
//      is not read in place; block 0 then announces the call: its entry (record and input place)
//      as self-identifying words into every peer's control block (transport/ipc/pull_entry.hpp),
//      which also say that its own tiles are ready; every other block that copied tells each
//      reader of this rank's input that block b's part is ready (its flag in that reader's
//      control block). (Announcing first, so that the copy overlaps the peers' judging, was
//      measured slower: block 0's tiles then need a flag of their own, and its wait costs more
//      than the copy it hides; bench/results/2026-12-02-h200-ipc-refusal-words.)
//   2. judge: every block polls every peer's entry words until they name this call, and judges
//      all records with the agreement's rule (kernels.hpp), so nothing is read or written before
//      every rank agreed (a refusing rank, or one with another plan, never raises the flags
//      waited for next); a verdict other than `go` skips the call on every rank, as the plan's
//      kernels do (kernels.hpp);
//   3. wait for the ready flags of every member that staged its input (blocks 1.. of its grid: a
//      copy's tiles need not be a read's); a registered input was ready before the call began;
//   4. look once more for a peer that gave up on the call (it timed out waiting for a rank that
//      came late), and stop before writing anything if one did; else sum its tiles of the
//      members' inputs, read where each member keeps it, into this rank's output (always the
//      caller's buffer: only this rank writes it);
//   5. tell each member that block b is done reading its input, and wait for every reader's
//      block b to say the same of this rank's, so that no input is written while a peer still
//      reads it once this kernel has ended (the next call's copy in, or the caller's stream).
// Per-block flags, no grid barrier: a call is two device-side round trips and the work. The call
// counter is advanced by block 0 once every block has read it (each counts itself in after the
// verdict).
//
// The pull form raises no entry mark (nothing waits for one: its waits are on words and flags);
// a rank that gave up raises its abort mark as every kernel does.
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
#include "relay/transport/ipc/pull_entry.hpp"
#include "relay/transport/ipc/pull_plan.hpp"
#include "relay/transport/ipc/stage.hpp"

namespace relay::ipc {

// The entry words carry a registration slot + 1 in 8 bits.
static_assert(ipc::max_registrations + 1 <= ipc::pull_entry_max_slot);

// Every rank's control block as this process addresses it, passed by value: the kernel keeps
// them in shared memory, so that a store to a peer waits for no load of a pointer table.
struct ipc_peers {
  ipc_control* controls[max_ranks] = {};
};

namespace detail {

// Block 0's wall clock at trace point `point` (into `stamps`, shared), where the transport is built
// with RELAY_IPC_TRACE=1: the pull form's per-phase device times. They reach the host block
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
    signal_release(env.system != 0);
    signal_store(&env.controls[threadIdx.x]->pull_flags[which][blockIdx.x][env.rank], call);
  }
}

// Step 1's announcement, by block 0's thread q for peer q (not this rank): the reason text where
// this rank refuses, then, after a release where something written before must be seen with them
// (that text, or block 0's staged tiles; on AMD always: signal_fence_ready_data), the entry words.
__device__ inline void ipc_pull_announce(const ipc_env& env, std::uint32_t q, std::uint64_t call,
                                         bool fence) {
  if (env.record.code != 0) ipc_copy_text(env.controls[q]->texts[env.rank], env.host->own_text);
  if (fence || signal_fence_ready_data) signal_release(env.system != 0);
  ipc_write_entry_words(env, q, call);
}

// Step 2, by the thread of peer q: polls q's entry words until all name `call` (true; `e` is what
// they say). Its failures are ipc_wait_for's; q's own abort or dead mark is seen by the scan of
// every peer's word (a rank that has given up writes no words). A timeout names q and "enter call
// #n".
__device__ inline bool ipc_pull_wait_entry(const ipc_env& env, std::uint32_t q, std::uint64_t call,
                                           ipc::pull_entry& e) {
  ipc_wait wait;
  wait.peer = q;
  std::uint64_t start = 0, scan = 0, host = 0;
  std::uint32_t spins = 0;
  for (;;) {
    if (ipc_read_entry_words(env, q, call, e)) return true;
    signal_backoff(++spins);
    if (spins % ipc_spins_per_look != 0) continue;
    if (ipc_aborted(env) != 0 || ipc_wait_tick(env, wait, call, start, scan, host)) return false;
  }
}

// Step 2's reading of the records, by thread q for peer q (this rank's own record from `env`):
// every peer's entry words waited for and its record stored in `records` (shared, by rank), then
// `seen(q, e)` with what they say; a failed wait sets `missing`. Nothing is waited for once the
// rank has given up (`give_up`). Shared by the pull and ll kernels.
template <int Block, class Seen>
__device__ inline void ipc_pull_read_entries(const ipc_env& env, std::uint64_t call,
                                             std::uint32_t give_up, entry_record* records,
                                             std::uint32_t& missing, Seen&& seen) {
  for (std::uint32_t q = threadIdx.x; q < env.ranks; q += Block) {
    if (q == env.rank) {
      records[q] = env.record;
      records[q].sequence = call;
      continue;
    }
    if (give_up != 0) continue;
    ipc::pull_entry e;
    if (!ipc_pull_wait_entry(env, q, call, e)) {
      missing = 1;
      continue;
    }
    records[q] = e.record;
    seen(q, e);
  }
}

// The sum of one 16-byte vector of `members` members (x(k): member k's), members in order, with
// the arithmetic of core/reduction.hpp (one rounding, then `divisor`). Most: the members the loop
// is unrolled for (members <= Most). The pull and ll forms' sum. The elements are taken from
// and put into the vectors' words by shifts: the vectors stay in registers.
template <class T, std::uint32_t Most, class Operand>
__device__ inline gpu::vec16 ipc_vector_sum(const Operand& x, std::uint32_t members,
                                            std::int32_t divisor) {
  using R = reduction_traits<T>;
  using A = typename R::accumulator;
  constexpr int E = 16 / sizeof(T);
  A acc[E];
#pragma unroll
  for (int i = 0; i < E; ++i)
    acc[i] = R::load(gpu::vec16_element<T>(x(0u), i));
#pragma unroll
  for (std::uint32_t k = 1; k < Most; ++k) {
    if (k < members) {  // a guard, not a break: clang unrolls no loop with an exit in it
#pragma unroll
      for (int i = 0; i < E; ++i)
        acc[i] = R::add(acc[i], gpu::vec16_element<T>(x(k), i));
    }
  }
  T t[E];
#pragma unroll
  for (int i = 0; i < E; ++i)
    t[i] = R::store(acc[i], divisor);
  return gpu::vec16_of<T>(t);
}

// Step 4: this block's part of the sum, members in order, with the arithmetic of
// core/reduction.hpp (one rounding). `delta`: per member, then the output's. Vectors of 16 bytes
// where every delta is a multiple of 16 (the staged places are 256-byte aligned), else element
// by element. Most: the members the vector loop is unrolled for (pl.members <= Most), so that a
// pair's sum runs a loop of its own size rather than one guarded for eight.
template <class T, int Block, std::uint32_t Most = max_reduce_inputs>
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
      // Every member's vector loaded before any is summed: the loads are in flight together
      // (a loop over `members` would wait for each in turn).
      gpu::vec16 x[Most];
#pragma unroll
      for (std::uint32_t k = 0; k < Most; ++k)
        if (k < pl.members) x[k] = reinterpret_cast<const gpu::vec16*>(source(k))[v];
      const gpu::vec16 y = ipc_vector_sum<T, Most>(
          [&](std::uint32_t k) -> const gpu::vec16& { return x[k]; }, pl.members, pl.divisor);
      reinterpret_cast<gpu::vec16*>(out)[v] = y;
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
__global__ void __launch_bounds__(ipc::pull_block_threads, 1)
    ipc_pull_kernel(ipc_pull pl, ipc_peers peers, gpu::copy_desc in, std::uint64_t in_tiles,
                    const RELAY_IPC_GRID_CONSTANT ipc_env env) {
  constexpr int Block = ipc::pull_block_threads;
  __shared__ std::uint32_t give_up;
  __shared__ std::int64_t delta[max_reduce_inputs + 1];  // per member, then the output's
  __shared__ std::uint8_t staged[max_ranks];             // each peer's input is its staged copy
  __shared__ std::uint64_t registered[max_reduce_inputs][ipc::max_registrations];  // members'
  __shared__ std::int32_t index_of[max_ranks];  // a rank's index among the members, or -1
  __shared__ ipc_control* controls[max_ranks];
  __shared__ std::uint64_t* outbox[max_ranks];
  __shared__ detail::ipc_entry_shared entry;
  __shared__ std::uint64_t gave_up_in;  // this rank's sticky word when the kernel began
  __shared__ std::uint32_t missing;     // a wait of this block failed
  __shared__ std::uint64_t stamps[ipc::trace_points];
  if (detail::ipc_void_piece(env)) return;
  // The loads of this rank's own words first, all in flight together (each is a trip to memory
  // that nothing before needs): the call counter, this rank's sticky word (thread 0), and a
  // captured call's input place (ipc/graph_inputs.hpp; the same word for every thread and block).
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  const std::uint64_t aborted = threadIdx.x == 0 ? detail::ipc_aborted(env) : 0;
  const std::uint64_t in_word =
      env.in_word != nullptr ? *static_cast<const volatile std::uint64_t*>(env.in_word) : 0;
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
    gave_up_in = aborted;
    give_up = gave_up_in != 0 ? 1u : 0u;
    missing = 0;
    if (pl.members > 0) {
      delta[pl.mine] = env.in_delta;
      delta[pl.members] = env.out_delta;
    }
  }
  __syncthreads();
  if (threadIdx.x < pl.members) index_of[pl.member[threadIdx.x]] = static_cast<int>(threadIdx.x);
  // What the stores to peers use: the control pointers from shared memory, and this call's input
  // place. The waits keep `env` itself, the kernel's argument read in place, which their
  // out-of-line paths take by reference (a modified env passed there would be copied to the stack,
  // and every read of it would go through memory).
  ipc_env sender = env;
  sender.controls = controls;
  sender.outbox = outbox;
  if (ipc::graph_input_slot(in_word) != 0) {  // registered since capture: read in place
    sender.in_slot = ipc::graph_input_slot(in_word);
    sender.in_offset = ipc::graph_input_offset(in_word);
    in_tiles = 0;
  }
  const std::uint64_t self = env.in_place != 0 ? std::uint64_t{1} << env.rank : 0;
  // 1. This block's part of the input staged (where it is), then ready for its readers: block
  // 0's part by its entry words (written after the block barrier and a fence), every other
  // block's by its flag. In place, this rank waits for its own copy too (every block's flag,
  // block 0's included).
  if (give_up == 0)  // the same answer for every thread of the block (its barriers)
    for (std::uint64_t t = blockIdx.x; t < in_tiles; t += gridDim.x)
      gpu::copy_desc_tile<Block, 1, false>(in, t);
  if (blockIdx.x == 0) {
    __syncthreads();
    if (give_up == 0) {
      const std::uint32_t q = threadIdx.x;
      if (q < env.ranks && q != env.rank)
        detail::ipc_pull_announce(sender, q, call, in_tiles > 0 || env.record.code != 0);
      if (in_tiles > 0 && self != 0) detail::ipc_pull_tell(sender, self, 0, call);
    } else if (threadIdx.x == 0) {
      detail::ipc_raise_all(sender, signal_mark(gave_up_in, signal_abort));
    }
  } else if (give_up == 0 && in_tiles > 0) {
    detail::ipc_pull_tell(sender, pl.readers | self, 0, call);
  }
  detail::ipc_pull_trace(stamps, 1);
  // 2. The agreement: every peer's entry, its record judged and its input place turned into the
  // sum's operand (delta: per member, then the output's).
  entry_record* records = entry.records();
  detail::ipc_pull_read_entries<Block>(
      env, call, give_up, records, missing, [&](std::uint32_t q, const ipc::pull_entry& e) {
        staged[q] = e.in_slot == 0 ? 1 : 0;
        // A staged input (block 0's part) or a reason text was written before the words: this
        // thread's later loads, and after the barrier its block's, are ordered after them.
        if (e.in_slot == 0 || e.record.code != 0 || signal_fence_ready_data)
          signal_acquire(env.system != 0);
        if (const int k = index_of[q]; k >= 0)
          delta[k] = e.in_slot == 0
                         ? 0
                         : static_cast<std::int64_t>(registered[k][e.in_slot - 1] + e.in_offset -
                                                     reinterpret_cast<std::uintptr_t>(pl.src[k]));
      });
  detail::ipc_pull_trace(stamps, 2);
  __syncthreads();
  bool stop = detail::ipc_decide(env, call, give_up, records, give_up != 0 || missing != 0);
  // Counted in once every thread of the block has used the call counter (its entry words, the
  // verdict), which block 0 advances at its end once every block is counted; off the path to the
  // announcement.
  if (threadIdx.x == 0 && gridDim.x > 1) atomicAdd(&env.me->arrived, 1u);
  detail::ipc_pull_trace(stamps, 3);
  // 3. The ready flags of every member that staged its input (this rank's own where its output
  // overwrites its input).
  if (!stop && pl.members > 0) {
    const std::uint32_t waits = pl.members * pl.grid;
    for (std::uint32_t i = threadIdx.x; i < waits; i += Block) {
      const std::uint32_t k = i / pl.grid, b = i % pl.grid;
      const std::uint32_t q = pl.member[k];
      const bool ready_flag =
          q == env.rank ? env.in_place != 0 && in_tiles > 0 : staged[q] != 0 && b > 0;
      if (!ready_flag) continue;
      ipc_wait w;
      w.peer = q;
      if (!detail::ipc_wait_flag(env, &env.me->pull_flags[0][b][q], w, call)) missing = 1;
    }
    __syncthreads();
    stop = missing != 0;
  }
  // A peer that gave up on this call (it waited for a rank past the timeout, or its host found
  // one gone) ends it here, before this block writes any output: one outcome per call. (A peer
  // that gives up while the sum is written is found at the end: the call fails then.)
  if (!stop) {
    __syncthreads();
    if (threadIdx.x == 0 && detail::ipc_peers_gave_up(env, call)) missing = 1;
    __syncthreads();
    stop = missing != 0;
  }
  detail::ipc_pull_trace(stamps, 4);
  // 4. The sum; 5. done reading: tell the members, then wait for this rank's readers.
  if (!stop && pl.members > 0) {
    bool vector = true;
    for (std::uint32_t k = 0; k <= pl.members; ++k)
      vector = vector && delta[k] % 16 == 0;
    // A pair, the common group, runs a loop of its own size: the one guarded for eight members
    // cost a replayed 2-process call about 1 us (bench/results/2026-12-03-h200-pair-sum).
    if (pl.members == 2)
      detail::ipc_pull_sum<T, Block, 2>(pl, delta, vector);
    else
      detail::ipc_pull_sum<T, Block>(pl, delta, vector);
    detail::ipc_pull_trace(stamps, 5);
    std::uint64_t read = 0;
    for (std::uint32_t k = 0; k < pl.members; ++k)
      if (k != pl.mine) read |= std::uint64_t{1} << pl.member[k];
    detail::ipc_pull_tell(sender, read, 1, call);
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
  // rank's abort mark where it gave up in this call.
  __syncthreads();
  detail::ipc_pull_trace(stamps, 7);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (gridDim.x > 1) {
      (void)detail::ipc_wait_own(env, call, [&] {
        return *static_cast<volatile std::uint32_t*>(&env.me->arrived) >= gridDim.x;
      });
      env.me->arrived = 0;
    }
    *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
    // A peer that gave up on this call while this rank pulled what it needed: this rank gives up
    // too (one outcome per call; its output is written, and its report says the call failed).
    if (!stop) stop = detail::ipc_peers_gave_up(env, call);
    // Where this block stopped: the rank gave up (its marks went out then, or it had given up
    // before and its announcement raised them); once more, as the plan's kernels do.
    if (stop)
      if (const std::uint64_t gave_up = detail::ipc_aborted(env); gave_up != 0)
        detail::ipc_raise_all(sender, signal_mark(gave_up, signal_abort));
  }
  detail::ipc_pull_trace(stamps, 8);
  detail::ipc_pull_trace_flush(env, call, stamps);
}

}  // namespace relay::ipc
