// The ipc transport's ll form (the rules: transport/ipc/ll_plan.hpp): a small allreduce in one
// kernel and one device-side trip, whose blocks, each on its own,
//   1. enter: block 0 announces the call as the pull form does (its entry as self-identifying
//      words into every peer's control block, transport/ipc/pull_entry.hpp); every block pushes
//      its vectors of this rank's input to every other member of its group, as words that carry
//      the call, into this rank's slot of the call's parity in that member's control block
//      (ipc_control::ll). The input is read where the caller keeps it: nothing is staged, no
//      peer reads this rank's memory;
//   2. judge: thread q polls peer q's entry words until they name this call, and thread 0 judges
//      all records with the agreement's rule (kernels.hpp); a verdict other than `go` skips the
//      call on every rank, as every form does. A rank that refuses pushes nothing; what its peers
//      pushed for a skipped call lies unread in its slots, which name that call. A call that goes
//      on stops where a peer gave up on it (it timed out waiting for a rank that came late: the
//      last look, before anything is written);
//   3. wait: every thread polls the words of its vectors in this rank's slots until every word
//      names the call (the read is the wait: a 64-bit word is stored and loaded whole, so a word
//      that names the call holds its data); then the block's barrier, so that a block writes
//      nothing where a wait of its failed;
//   4. sum its vectors, members in group order, with relay's arithmetic (core/reduction.hpp: the
//      pull form's bits), its own input read from the caller's buffer and the peers' from the
//      words, into this rank's output (the caller's buffer: only this rank writes it).
// The last block to count itself out advances the call counter (every block read it at its start).
// So a call is the push, one trip, and the sum: the entry words and the data travel together. (A
// version that judged beside the wait for the words, through flags in shared memory, was no faster
// and left compute-sanitizer's racecheck hazards: bench/results/2026-12-06-h100-ll-form.)
//
// Why no barrier at the end, and no flag: a member writes its slot of call s + 2 in a peer only
// after its own call s + 1 judged that peer's entry of s + 1, which the peer's kernel wrote after
// its kernel of call s, the one that read the slot, had ended (a rank's kernels run in turn). The
// call's parity keeps s + 1's words out of s's slot.
//
// Failures as in kernels.hpp: every wait also scans every peer's signal word, this rank's host
// flag and its deadline, and gives up the same way. A timeout of the words names the peer and
// "enter call #n": its data is part of its entry in this form. A peer that gives up on the call
// after this rank's last look (before it writes) fails its call alone; this rank's next call
// sees its abort mark and fails.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <cstdint>

#include "relay/core/reduction.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/transport/ipc/kernels.hpp"
#include "relay/transport/ipc/ll_plan.hpp"
#include "relay/transport/ipc/pull.hpp"

namespace relay::ipc {

namespace detail {

using ll_vec = gpu::detail::vec16;

// Vector v of the `bytes` at p: one 16-byte load where p is 16-byte aligned and the vector lies
// within; else byte by byte, zeros past the end (the last vector of an input not a multiple of
// 16 bytes, an input aligned to its elements only).
__device__ inline ll_vec ll_load(const unsigned char* p, std::uint64_t v, std::uint64_t bytes,
                                 bool aligned) {
  const std::uint64_t at = v * 16;
  if (aligned && at + 16 <= bytes) return reinterpret_cast<const ll_vec*>(p)[v];
  ll_vec x{};
  auto* b = reinterpret_cast<unsigned char*>(&x);
  for (int i = 0; i < 16; ++i)
    b[i] = at + i < bytes ? p[at + i] : 0;
  return x;
}

__device__ inline std::uint32_t ll_part(const ll_vec& x, int j) {
  return reinterpret_cast<const std::uint32_t*>(&x)[j];
}

// Vector v of a peer's words in `slot` once all 4 name `call` (true; `x` is their data), or false
// once this rank gives up (the wait's failures are ipc_wait_for's; `w` names the peer).
__device__ inline bool ll_take(const ipc_env& env, const std::uint64_t* slot, std::uint64_t v,
                               std::uint64_t vectors, std::uint64_t call, const ipc_wait& w,
                               ll_vec& x) {
  std::uint64_t word[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    word[j] = signal_peek(&slot[ll_word(v, j, vectors)], env.system != 0);
  std::uint64_t start = 0, scan = 0, host = 0;
  std::uint32_t spins = 0;
  for (;;) {
    bool landed = true;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      landed = landed && ll_word_is(word[j], call);
    if (landed) break;
    signal_backoff(++spins);
    if (spins % ipc_spins_per_look == 0 &&
        (ipc_aborted(env) != 0 || ipc_wait_tick(env, w, call, start, scan, host)))
      return false;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (!ll_word_is(word[j], call))
        word[j] = signal_peek(&slot[ll_word(v, j, vectors)], env.system != 0);
  }
  auto* d = reinterpret_cast<std::uint32_t*>(&x);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    d[j] = static_cast<std::uint32_t>(word[j]);
  return true;
}

// The sum of one vector: `x[k]` member k's, members in order, rounded once (core/reduction.hpp),
// stored whole where the output is aligned and the vector lies within, else element by element.
template <class T, std::uint32_t Most>
__device__ inline void ll_store_sum(const ll_vec* x, std::uint32_t members, std::int32_t divisor,
                                    T* out, std::uint64_t v, std::uint64_t count, bool aligned) {
  using R = reduction_traits<T>;
  using A = typename R::accumulator;
  constexpr int E = 16 / sizeof(T);
  A acc[E];
  {
    const T* t = reinterpret_cast<const T*>(&x[0]);
#pragma unroll
    for (int i = 0; i < E; ++i)
      acc[i] = R::load(t[i]);
  }
#pragma unroll
  for (std::uint32_t k = 1; k < Most; ++k) {
    if (k < members) {  // a guard, not a break: clang unrolls no loop with an exit in it
      const T* t = reinterpret_cast<const T*>(&x[k]);
#pragma unroll
      for (int i = 0; i < E; ++i)
        acc[i] = R::add(acc[i], t[i]);
    }
  }
  ll_vec y;
  T* t = reinterpret_cast<T*>(&y);
#pragma unroll
  for (int i = 0; i < E; ++i)
    t[i] = R::store(acc[i], divisor);
  const std::uint64_t first = v * E;
  if (aligned && first + E <= count) {
    reinterpret_cast<ll_vec*>(out)[v] = y;
    return;
  }
  for (int i = 0; i < E; ++i)
    if (first + i < count) out[first + i] = t[i];
}

// Where this thread's vectors lie: `vectors` 16-byte vectors of a call of `bytes`, from `first`
// by `stride` (one vector per thread of the grid, then round again).
struct ll_walk {
  std::uint64_t bytes = 0, vectors = 0, first = 0, stride = 0;
};
template <class T, int Block>
__device__ inline ll_walk ll_walk_of(const ipc_ll& a) {
  ll_walk w;
  w.bytes = a.count * sizeof(T);
  w.vectors = ll_vectors(w.bytes);
  w.first = static_cast<std::uint64_t>(blockIdx.x) * Block + threadIdx.x;
  w.stride = static_cast<std::uint64_t>(gridDim.x) * Block;
  return w;
}

// Steps 3 and 4 for this block: Most members at most (a pair runs a loop of its own size).
// `head`: this thread's first vector of this rank's input, loaded in step 1. False where a wait of
// the block failed: then the block wrote nothing.
template <class T, std::uint32_t Most>
__device__ inline bool ll_wait_and_sum(const ipc_env& env, const ipc_ll& a, const ll_walk& w,
                                       std::uint64_t call, const ll_vec& head,
                                       std::uint32_t& missing, std::uint64_t* stamps) {
  const auto* in = static_cast<const unsigned char*>(a.in);
  const bool in_aligned = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0;
  const bool out_aligned = reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
  const std::uint32_t parity = static_cast<std::uint32_t>(call & 1);
  auto slot = [&](std::uint32_t k) { return env.me->ll[parity][a.member[k]]; };
  // 3. The words of every vector of this thread; the first vector's kept (most calls give a
  // thread one vector), the others read again for the sum (they stay until call + 2).
  ll_vec held[Most];
  bool ok = true;
  for (std::uint64_t v = w.first; ok && v < w.vectors; v += w.stride) {
#pragma unroll
    for (std::uint32_t k = 0; k < Most; ++k) {
      if (k >= a.members || k == a.mine || !ok) continue;
      ipc_wait wait;
      wait.peer = a.member[k];
      ll_vec x;
      ok = ll_take(env, slot(k), v, w.vectors, call, wait, x);
      if (v == w.first) held[k] = x;
    }
  }
  if (!ok) missing = 1;
  ipc_pull_trace(stamps, 4);
  __syncthreads();
  ipc_pull_trace(stamps, 5);
  if (missing != 0) return false;
  // 4. The sums.
  T* out = static_cast<T*>(a.out);
  for (std::uint64_t v = w.first; v < w.vectors; v += w.stride) {
    ll_vec x[Most];
#pragma unroll
    for (std::uint32_t k = 0; k < Most; ++k) {
      if (k >= a.members) continue;
      if (k == a.mine) {
        x[k] = v == w.first ? head : ll_load(in, v, w.bytes, in_aligned);
      } else if (v == w.first) {
        x[k] = held[k];
      } else {
        auto* d = reinterpret_cast<std::uint32_t*>(&x[k]);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          d[j] = static_cast<std::uint32_t>(
              signal_peek(&slot(k)[ll_word(v, j, w.vectors)], env.system != 0));
      }
    }
    ll_store_sum<T, Most>(x, a.members, a.divisor, out, v, a.count, out_aligned);
  }
  ipc_pull_trace(stamps, 6);
  return true;
}

}  // namespace detail

// Every argument a grid constant (read in place: an argument indexed at run time, a member's
// rank or a peer's control block, would otherwise be copied to the stack first), and no block
// barrier before the push: every thread reads the rank's sticky word itself (one word). (No
// __syncthreads_or: HIP 5's compiles it for gfx90a with an instruction gfx90a lacks.)
template <class T>
__global__ void __launch_bounds__(ipc::pull_block_threads, 1)
    ipc_ll_kernel(const RELAY_IPC_GRID_CONSTANT ipc_ll a,
                  const RELAY_IPC_GRID_CONSTANT ipc_peers peers,
                  const RELAY_IPC_GRID_CONSTANT ipc_env env) {
  constexpr int Block = ipc::pull_block_threads;
  __shared__ std::uint32_t give_up;
  __shared__ std::uint32_t missing;   // a wait of this block failed
  __shared__ std::uint64_t given_up;  // this rank's sticky word as thread 0 read it
  __shared__ detail::ipc_entry_shared entry;
  __shared__ std::uint64_t stamps[ipc::trace_points];
  if (detail::ipc_void_piece(env)) return;
  detail::ipc_pull_trace(stamps, 0);
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  const std::uint64_t gave_up_in = detail::ipc_aborted(env);
  const std::uint32_t parity = static_cast<std::uint32_t>(call & 1);
  const detail::ll_walk w = detail::ll_walk_of<T, Block>(a);
  const auto* in = static_cast<const unsigned char*>(a.in);
  const bool in_aligned = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0;
  const bool member = a.members > 0 && env.record.code == 0;
  // This thread's first vector of the input, loaded before anything waits for it.
  detail::ll_vec head{};
  if (member && w.first < w.vectors) head = detail::ll_load(in, w.first, w.bytes, in_aligned);
  // 1. The announcement (block 0), then this block's vectors pushed to every other member.
  if (gave_up_in == 0) {
    if (blockIdx.x == 0 && threadIdx.x < env.ranks && threadIdx.x != env.rank) {
      ipc_control* peer = peers.controls[threadIdx.x];
      if (env.record.code != 0) {
        detail::ipc_copy_text(peer->texts[env.rank], env.host->own_text);
        signal_release(env.system != 0);
      }
      detail::ipc_write_entry_words_into(peer, env, call);
    }
    if (member)
      for (std::uint64_t v = w.first; v < w.vectors; v += w.stride) {
        const detail::ll_vec x = v == w.first ? head : detail::ll_load(in, v, w.bytes, in_aligned);
        for (std::uint32_t k = 0; k < a.members; ++k) {
          if (k == a.mine) continue;
          std::uint64_t* slot = peers.controls[a.member[k]]->ll[parity][env.rank];
#pragma unroll
          for (int j = 0; j < 4; ++j)
            signal_store(&slot[ll_word(v, j, w.vectors)], ll_word_of(call, detail::ll_part(x, j)),
                         env.system != 0);
        }
      }
  } else if (blockIdx.x == 0 && threadIdx.x == 0) {
    detail::ipc_raise_all(env, signal_mark(gave_up_in, signal_abort));
  }
  if (threadIdx.x == 0) {
    given_up = gave_up_in;  // what every thread decides by from here: one answer for the block
    missing = 0;
  }
  __syncthreads();  // after the push, which waits for nothing
  detail::ipc_pull_trace(stamps, 1);
  // 2. The agreement: every peer's entry, its record judged; then, for a call that goes on, the
  // last look for a peer that gave up on it before anything is written (one outcome per call).
  entry_record* records = entry.records();
  detail::ipc_pull_read_entries<Block>(
      env, call, given_up != 0 ? 1u : 0u, records, missing,
      [&](std::uint32_t, const ipc::pull_entry& e) {
        if (e.record.code != 0) signal_acquire(env.system != 0);  // its reason text, before
      });
  detail::ipc_pull_trace(stamps, 2);
  __syncthreads();
  const bool stop =
      detail::ipc_decide(env, call, give_up, records, missing != 0 || given_up != 0, true);
  detail::ipc_pull_trace(stamps, 3);
  // 3 and 4. The words, then the sum (a pair, the common group, in a loop of its own size).
  bool summed = false;
  if (!stop && a.members > 0)
    summed = a.members == 2 ? detail::ll_wait_and_sum<T, 2>(env, a, w, call, head, missing, stamps)
                            : detail::ll_wait_and_sum<T, max_reduce_inputs>(env, a, w, call, head,
                                                                            missing, stamps);
  // The end: the last block to count itself out advances the call counter (every thread of every
  // block read it before its block's first barrier); where this rank gave up in this call (a wait
  // failed), block 0 publishes its abort mark once more.
  detail::ipc_pull_trace(stamps, 7);
  if (threadIdx.x == 0) {
    if (gridDim.x == 1 || atomicAdd(&env.me->arrived, 1u) == gridDim.x - 1) {
      env.me->arrived = 0;
      *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
    }
    if (blockIdx.x == 0 && (stop || (a.members > 0 && !summed)))
      if (const std::uint64_t gave_up = detail::ipc_aborted(env); gave_up != 0)
        detail::ipc_raise_all(env, signal_mark(gave_up, signal_abort));
  }
  detail::ipc_pull_trace(stamps, 8);
  detail::ipc_pull_trace_flush(env, call, stamps);
}

}  // namespace relay::ipc
