// The ipc transport's ll form (the rules: transport/ipc/ll_plan.hpp): a small allreduce in one
// kernel and one device-side trip, whose blocks, each on its own,
//   1. enter: block 0 announces the call as the pull form does (its entry as self-identifying
//      words into every peer's control block, transport/ipc/pull_entry.hpp); every block pushes
//      its vectors of this rank's input to every other member of its group, as words that carry
//      the call, into this rank's slot of the call's parity in that member's control block
//      (ipc_control::ll). The input is read where the caller keeps it: nothing is staged, no
//      peer reads this rank's memory;
//   2. wait, for the entries and the words together: every thread polls the words of its
//      vectors in this rank's slots until every word names the call (the read is the wait: a
//      64-bit word is stored and loaded whole, so a word that names the call holds its data), and
//      thread q reads peer q's entry words with each poll until they name this call (its record,
//      for the verdict, compared there with this rank's own: records_promise_go), so that the
//      entry and the words come in one trip; it waits for the entry after its words only where
//      the entry comes later. A rank that refuses pushes no words: a thread whose words are slow
//      looks at that peer's entry, and stops waiting where the two records alone rule out `go`
//      (records_rule_out_go: the verdict then is not `go` either). Then thread q's last look
//      for peer q having given up on the call (it timed out waiting for this rank, which came
//      late): before anything is written, so that such a call has one outcome. Its word is
//      loaded once q's entry is read, while the words are polled (a peer that gave up before
//      this rank came shows it by then), and read again only where it reads aborted;
//   3. judge, at the block's barrier, where the threads' failures and comparisons meet in a vote
//      (gpu/block_vote.hpp): where every record promised `go` and nothing failed, every thread
//      goes on at once; where one did not, thread 0 judges all records with the agreement's rule
//      (kernels.hpp) between two more barriers; a verdict other than `go`, or a wait of the block
//      that failed, skips the call on every rank as every form does, with nothing written;
//   4. sum its vectors, members in group order, with relay's arithmetic (core/reduction.hpp: the
//      pull form's bits), its own input read from the caller's buffer and the peers' from the
//      words, into this rank's output (the caller's buffer: only this rank writes it).
// The last block to count itself out advances the call counter (every block read it at its start).
// So a call is the push, one trip and one barrier (three where a record makes no promise): the
// entry words and the data travel together, and are waited for together.
//
// The kernel is compiled for a pair (Most = 2, the common group), for up to a node's 8 GPUs and
// for up to max_reduce_inputs members (ll_kernel_members): each group runs loops of its own size.
// The pair's spills no registers, the 8's at most 8 bytes; the last, which holds 16 vectors a
// thread, spills more. What a call rarely runs is compiled out of line (RELAY_IPC_COLD): a
// wait's look at the clock and the peers, the verdict of records that made no promise, a vector
// the caller's buffers do not take whole, an abort's marks; and the wait for a member's words is
// one loop, not one copy per member. So the pair's kernel is 45 KB of machine code with its
// out-of-line parts, 22 KB before the first of them (sm_90), the 16's 59 KB
// (bench/results/2026-12-07-h100-ll-cold-paths, 2026-12-07-h100-early-launch).
//
// The kernel is launched early where the runtime can (launch_ll_kernel, gpu/grid_dependency.hpp):
// it waits for the kernel ahead of it before it reads anything, and each block lets the next
// kernel in once it has its verdict. Past the verdict a block waits for no other rank, so the
// next kernel's blocks, which may then take room on the device, never hold up a peer's kernel
// that this one still waits for.
//
// Why no barrier at the end, and no flag: a member writes its slot of call s + 2 in a peer only
// after its own call s + 1 read that peer's entry of s + 1, which the peer's kernel wrote after
// its kernel of call s, the one that read the slot, had ended (a rank's kernels run in turn). The
// call's parity keeps s + 1's words out of s's slot. What a refusing or mismatched peer pushed for
// a skipped call lies unread in its slots, which name that call.
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
#include "relay/gpu/block_vote.hpp"
#include "relay/gpu/grid_dependency.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/transport/ipc/kernels.hpp"
#include "relay/transport/ipc/ll_plan.hpp"
#include "relay/transport/ipc/pull.hpp"

namespace relay::ipc {

namespace detail {

using ll_vec = gpu::vec16;

// Vector v of the `bytes` at p where it is not one aligned 16-byte load (the last vector of an
// input not a multiple of 16 bytes, an input aligned to its elements only): byte by byte, zeros
// past the end. Out of line, as the waits' rare paths are (RELAY_IPC_COLD): inlined at each of
// its three uses, its loads and shifts would lie between the hot path's instructions.
RELAY_IPC_COLD __device__ inline ll_vec ll_load_bytes(const unsigned char* p, std::uint64_t v,
                                                      std::uint64_t bytes) {
  const std::uint64_t at = v * 16;
  unsigned char b[16];
#pragma unroll
  for (int i = 0; i < 16; ++i)
    b[i] = at + i < bytes ? p[at + i] : 0;
  return gpu::vec16_of(b);
}

// Vector v of the `bytes` at p: one 16-byte load where p is 16-byte aligned and the vector lies
// within, else ll_load_bytes.
__device__ inline ll_vec ll_load(const unsigned char* p, std::uint64_t v, std::uint64_t bytes,
                                 bool aligned) {
  if (aligned && v * 16 + 16 <= bytes) return reinterpret_cast<const ll_vec*>(p)[v];
  return ll_load_bytes(p, v, bytes);
}

// What a wait for a vector of a peer's words came to.
enum class ll_taken : std::uint8_t {
  landed,   // all 4 words name the call: the vector is its data
  stopped,  // the peer's entry of the call rules out `go` beside this rank's record
  failed,   // this rank gave up (ipc_wait_for's failures)
  waiting,  // neither yet (a look's answer: ll_look)
};

// A peer's entry that a thread reads while it polls its words (thread q reads peer q's): its
// words are loaded with the vector's, so that the two trips are one. `mark`: this rank's copy of
// the peer's signal word, loaded once the entry is read, for the last look.
struct ll_entry_watch {
  std::uint32_t peer = 0;
  bool due = false;  // not read yet
  ipc::pull_entry entry;
  std::uint64_t mark = 0;
};
// The watched entry has been read: its peer's signal word loaded for the last look.
__device__ inline void ll_entry_read(const ipc_env& env, ll_entry_watch& watch) {
  watch.due = false;
  watch.mark = signal_peek(&env.me->signal[watch.peer]);
}
__device__ inline void ll_watch(const ipc_env& env, std::uint64_t call, ll_entry_watch& watch) {
  if (watch.due && ipc_read_entry_words(env, watch.peer, call, watch.entry))
    ll_entry_read(env, watch);
}

// A wait for peer q's words, every ipc_spins_per_look polls: whether this rank gave up
// (ipc_wait_tick's failures: failed), or q's entry of the call rules out `go` beside this rank's
// record (stopped: a peer that refuses pushes no words, and one that called with another shape
// pushes them elsewhere); else waiting. Out of line, with the clock's state it keeps (`start`,
// `scan`, `host`): the polls between looks run through the hot path's instructions alone.
RELAY_IPC_COLD __device__ inline ll_taken ll_look(const ipc_env& env, std::uint64_t call,
                                                  std::uint32_t q, std::uint64_t& start,
                                                  std::uint64_t& scan, std::uint64_t& host) {
  ipc_wait w;
  w.peer = q;
  if (ipc_aborted(env) != 0 || ipc_wait_tick(env, w, call, start, scan, host))
    return ll_taken::failed;
  ipc::pull_entry e;
  if (ipc_read_entry_words(env, q, call, e) && records_rule_out_go(env.record, e.record))
    return ll_taken::stopped;
  return ll_taken::waiting;
}

// The 4 words of vector v in a peer's `slot`, as loaded: each carries its call in its upper half
// (ll_word_is) and 4 bytes of the vector in its lower (ll_payload).
__device__ inline void ll_peek_words(const std::uint64_t* slot, std::uint64_t v,
                                     std::uint64_t vectors, std::uint64_t (&word)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j)
    word[j] = signal_peek(&slot[ll_word(v, j, vectors)]);
}
__device__ inline ll_vec ll_payload(const std::uint64_t (&word)[4]) {
  ll_vec x;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    x.w[j] = static_cast<std::uint32_t>(word[j]);
  return x;
}

// Vector v of peer q's words in `slot`, polled until all 4 name `call`; each poll reads the
// watched entry too, until it is read, and every ipc_spins_per_look polls ll_look looks further.
__device__ inline ll_taken ll_take(const ipc_env& env, const std::uint64_t* slot, std::uint64_t v,
                                   std::uint64_t vectors, std::uint64_t call, std::uint32_t q,
                                   ll_entry_watch& watch, ll_vec& x) {
  std::uint64_t word[4];
  ll_peek_words(slot, v, vectors, word);
  std::uint64_t start = 0, scan = 0, host = 0;
  std::uint32_t spins = 0;
  for (;;) {
    ll_watch(env, call, watch);  // its loads in flight with the words'
    bool landed = true;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      landed = landed && ll_word_is(word[j], call);
    if (landed) break;
    signal_backoff(++spins);
    if (spins % ipc_spins_per_look == 0)
      if (const ll_taken t = ll_look(env, call, q, start, scan, host); t != ll_taken::waiting)
        return t;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (!ll_word_is(word[j], call)) word[j] = signal_peek(&slot[ll_word(v, j, vectors)]);
  }
  x = ll_payload(word);
  return ll_taken::landed;
}

// Where this thread's vectors lie: `vectors` 16-byte vectors of a call of `bytes`, from `first`
// by `stride` (one vector per thread of the grid, then round again), and whether the caller's
// buffers take them whole.
struct ll_walk {
  const unsigned char* in = nullptr;
  std::uint64_t bytes = 0, vectors = 0, first = 0, stride = 0;
  bool in_aligned = false, out_aligned = false;
};
template <class T, int Block>
__device__ inline ll_walk ll_walk_of(const ipc_ll& a) {
  ll_walk w;
  w.in = static_cast<const unsigned char*>(a.in);
  w.bytes = a.count * sizeof(T);
  w.vectors = ll_vectors(w.bytes);
  w.first = static_cast<std::uint64_t>(blockIdx.x) * Block + threadIdx.x;
  w.stride = static_cast<std::uint64_t>(gridDim.x) * Block;
  w.in_aligned = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0;
  w.out_aligned = reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
  return w;
}
__device__ inline ll_vec ll_input(const ll_walk& w, std::uint64_t v) {
  return ll_load(w.in, v, w.bytes, w.in_aligned);
}

// Vector v of the output element by element, where it is not one aligned store (out of line,
// as ll_load_bytes).
template <class T>
RELAY_IPC_COLD __device__ inline void ll_store_elements(ll_vec y, T* out, std::uint64_t v,
                                                        std::uint64_t count) {
  constexpr int E = 16 / sizeof(T);
  const std::uint64_t first = v * E;
#pragma unroll
  for (int i = 0; i < E; ++i)
    if (first + i < count) out[first + i] = gpu::vec16_element<T>(y, i);
}

// Vector v of the output: whole where the output is aligned and the vector lies within, else
// ll_store_elements.
template <class T>
__device__ inline void ll_store(const ll_vec& y, T* out, std::uint64_t v, std::uint64_t count,
                                bool aligned) {
  constexpr int E = 16 / sizeof(T);
  if (aligned && v * E + E <= count)
    reinterpret_cast<ll_vec*>(out)[v] = y;
  else
    ll_store_elements<T>(y, out, v, count);
}

// What a thread casts in the block's vote (gpu::block_vote) before the verdict. A thread whose
// wait stopped on a peer's entry that ruled out `go` casts nothing of its own: that peer's
// thread, which read the same entry, casts ll_judge.
inline constexpr std::uint32_t ll_failed = 1;  // a wait failed, or the rank had given up
inline constexpr std::uint32_t ll_judge = 2;   // a record (this rank's or a peer's) made no promise
using ll_vote = gpu::block_vote<ipc::pull_block_threads, 2>;

// The verdict of every record (ipc_decide: thread 0 judges, between two barriers), where one made
// no promise: out of line, as a refusal or a mismatch is rare and judge() is long.
RELAY_IPC_COLD __device__ inline bool ll_decide(const ipc_env& env, std::uint64_t call,
                                                std::uint32_t& give_up,
                                                const entry_record* records) {
  return ipc_decide(env, call, give_up, records, false);
}

// Steps 2 to 4 for this block, Most members at most (a pair runs loops of its own size). `head`:
// this thread's first vector of this rank's input, loaded in step 1; `gave_up_in`: this rank's
// sticky word as this thread read it. True where the call stopped: a wait failed, or the verdict
// is not `go` (then the block wrote nothing); false where it goes on (every member summed).
template <class T, std::uint32_t Most>
__device__ inline bool ll_join(const ipc_env& env, const ipc_ll& a, const ll_walk& w,
                               std::uint64_t call, std::uint64_t gave_up_in, const ll_vec& head,
                               entry_record* records, ll_vote& vote, std::uint32_t& give_up,
                               std::uint64_t* stamps) {
  const std::uint32_t q = threadIdx.x;
  const std::uint32_t parity = static_cast<std::uint32_t>(call & 1);
  auto slot = [&](std::uint32_t k) { return env.me->ll[parity][a.member[k]]; };
  bool failed = gave_up_in != 0, judge = false;
  // 2. Peer q's entry, read by thread q while it polls its words (this rank's own record from its
  // env), and whether it promises `go` beside this rank's.
  ll_entry_watch watch;
  watch.peer = q;
  watch.due = q < env.ranks && q != env.rank && !failed;
  if (q == env.rank) {
    records[q] = env.record;
    records[q].sequence = call;
    judge = !records_promise_go(env.record, env.record);
  }
  // The words of every vector of this thread; the first vector's kept (most calls give a thread
  // one vector), the others read again for the sum (they stay until call + 2).
  ll_vec held[Most];
  bool stopped = false;  // a peer's entry ruled out `go` (its thread casts ll_judge)
  // One wait's code for every member (the loop over members not unrolled), its vector put in
  // place by an unrolled select: held[] is indexed by constants only, so it stays in registers.
  if (a.members > 0 && env.record.code == 0)
    for (std::uint64_t v = w.first; !failed && !stopped && v < w.vectors; v += w.stride)
      for (std::uint32_t k = 0; k < a.members && !failed && !stopped; ++k) {
        if (k == a.mine) continue;
        ll_vec x;
        const ll_taken t = ll_take(env, slot(k), v, w.vectors, call, a.member[k], watch, x);
        failed = t == ll_taken::failed;
        stopped = t == ll_taken::stopped;
        if (v == w.first)
#pragma unroll
          for (std::uint32_t i = 0; i < Most; ++i)
            if (i == k) held[i] = x;
      }
  ipc_pull_trace(stamps, 2);
  // The entry, where it came after the words or the thread polled none.
  if (watch.due && !failed) {
    if (ipc_pull_wait_entry(env, q, call, watch.entry))
      ll_entry_read(env, watch);
    else
      failed = true;
  }
  const bool peer_read = q < env.ranks && q != env.rank && !watch.due && !failed;
  if (peer_read) {
    records[q] = watch.entry.record;
    if (watch.entry.record.code != 0) signal_acquire(env.system != 0);  // its reason text, before
    judge = !records_promise_go(watch.entry.record, env.record);
  }
  ipc_pull_trace(stamps, 3);
  // The last look, before anything is written: peer q gave up on this call. Its word as loaded
  // once q's entry was read (a peer that gave up before this rank came, the late rank's case,
  // shows it there); only a word that reads aborted is read again and judged.
  if (peer_read && signal_aborted(watch.mark) && ipc_peer_gave_up(env, q, call)) failed = true;
  ipc_pull_trace(stamps, 4);
  // 3. The vote at the barrier, then the verdict: every thread reads the vote (the same bits), and
  // only where a record made no promise does thread 0 judge them all, between two more barriers.
  vote.cast((failed ? ll_failed : 0u) | (judge ? ll_judge : 0u));
  __syncthreads();
  ipc_pull_trace(stamps, 5);
  // No thread writes shared memory between this barrier and the next: the vote's reads stand
  // alone (compute-sanitizer's racecheck reported reads of the vote beside thread 0's store of
  // the verdict, when they shared an interval).
  const std::uint32_t said = vote.result();
  if ((said & ll_failed) != 0) return true;
  if ((said & ll_judge) != 0) {
    __syncthreads();  // every thread has read the vote
    if (ll_decide(env, call, give_up, records)) return true;
  }
  ipc_pull_trace(stamps, 6);
  // Past the verdict this block waits for no other rank: a next kernel launched early may take
  // its room (nothing where it was launched the ordinary way).
  gpu::allow_next_grid();
  if (a.members == 0) return false;
  // 4. The sums.
  T* out = static_cast<T*>(a.out);
  for (std::uint64_t v = w.first; v < w.vectors; v += w.stride) {
    const ll_vec own = v == w.first ? head : ll_input(w, v);
    ll_vec x[Most];
#pragma unroll
    for (std::uint32_t k = 0; k < Most; ++k) {
      if (k >= a.members || k == a.mine) continue;
      if (v == w.first) {
        x[k] = held[k];
      } else {
        std::uint64_t word[4];
        ll_peek_words(slot(k), v, w.vectors, word);
        x[k] = ll_payload(word);
      }
    }
    const ll_vec y = ipc_vector_sum<T, Most>(
        [&](std::uint32_t k) { return k == a.mine ? own : x[k]; }, a.members, a.divisor);
    ll_store<T>(y, out, v, a.count, w.out_aligned);
  }
  ipc_pull_trace(stamps, 7);
  return false;
}

// This rank's abort mark of the call it gave up in, published to every peer once more (a rank
// that gave up: rare, out of line).
RELAY_IPC_COLD __device__ inline void ll_raise_abort(const ipc_env& env, std::uint64_t gave_up) {
  ipc_raise_all(env, signal_mark(gave_up, signal_abort));
}

}  // namespace detail

// Every argument a grid constant (read in place: an argument indexed at run time, a member's
// rank or a peer's control block, would otherwise be copied to the stack first), and no block
// barrier before the push: every thread reads the rank's sticky word itself (one word). Most:
// the members the kernel's loops are unrolled for (a.members <= Most): launch_ll_kernel runs the
// smallest that holds the group (ll_kernel_members).
template <class T, std::uint32_t Most>
__global__ void __launch_bounds__(ipc::pull_block_threads, 1)
    ipc_ll_kernel(const RELAY_IPC_GRID_CONSTANT ipc_ll a,
                  const RELAY_IPC_GRID_CONSTANT ipc_peers peers,
                  const RELAY_IPC_GRID_CONSTANT ipc_env env) {
  constexpr int Block = ipc::pull_block_threads;
  __shared__ std::uint32_t give_up;
  __shared__ detail::ll_vote vote;
  __shared__ detail::ipc_entry_shared entry;
  __shared__ std::uint64_t stamps[ipc::trace_points];
  // Launched early (ipc::options::early_launch), this kernel may be resident before the kernel
  // ahead of it on its stream has ended: it reads nothing before that kernel's writes are visible.
  gpu::wait_for_prior_grids();
  if (detail::ipc_void_piece(env)) return;
  detail::ipc_pull_trace(stamps, 0);
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  const std::uint64_t gave_up_in = detail::ipc_aborted(env);
  const std::uint32_t parity = static_cast<std::uint32_t>(call & 1);
  const detail::ll_walk w = detail::ll_walk_of<T, Block>(a);
  const bool member = a.members > 0 && env.record.code == 0;
  // This thread's first vector of the input, loaded before anything waits for it.
  detail::ll_vec head{};
  if (member && w.first < w.vectors) head = detail::ll_input(w, w.first);
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
        const detail::ll_vec x = v == w.first ? head : detail::ll_input(w, v);
        for (std::uint32_t k = 0; k < a.members; ++k) {
          if (k == a.mine) continue;
          std::uint64_t* slot = peers.controls[a.member[k]]->ll[parity][env.rank];
#pragma unroll
          for (int j = 0; j < 4; ++j)
            signal_store(&slot[ll_word(v, j, w.vectors)], ll_word_of(call, x.w[j]));
        }
      }
  } else if (blockIdx.x == 0 && threadIdx.x == 0) {
    detail::ll_raise_abort(env, gave_up_in);
  }
  detail::ipc_pull_trace(stamps, 1);
  // 2 to 4.
  const bool stopped = detail::ll_join<T, Most>(env, a, w, call, gave_up_in, head, entry.records(),
                                                vote, give_up, stamps);
  // The end: the last block to count itself out advances the call counter (every thread of every
  // block read it before its block's first barrier); where this rank gave up in this call (a wait
  // failed), block 0 publishes its abort mark once more.
  if (threadIdx.x == 0) {
    if (gridDim.x == 1 || atomicAdd(&env.me->arrived, 1u) == gridDim.x - 1) {
      env.me->arrived = 0;
      *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
    }
    if (blockIdx.x == 0 && stopped)
      if (const std::uint64_t gave_up = detail::ipc_aborted(env); gave_up != 0)
        detail::ll_raise_abort(env, gave_up);
  }
  detail::ipc_pull_trace(stamps, 8);
  detail::ipc_pull_trace_flush(env, call, stamps);
}

}  // namespace relay::ipc
