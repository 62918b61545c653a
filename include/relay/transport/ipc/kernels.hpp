// The ipc transport's device side (transport/ipc/transport.hpp). A call of a rank is a sequence of
// stages: the entry (the call's agreement, then the copy of the user's input into the rank's
// registered area), one per phase of the rank's slice in which it issues operations (its pushes
// into peers' memory, or its reductions), and the exit (the copy of the output back to the user's
// buffer). Stepped form: one launch of ipc_step_kernel per stage. One-shot form (small calls): one
// launch of ipc_one_shot_kernel for all of them, its blocks meeting at a grid barrier between
// stages.
//
// The entry (every call, on every rank, also one that this rank refused: then it is the only
// stage, launched on a stage with no lists):
//   1. block 0 writes this rank's entry record (transport/agreement.hpp) into every rank's
//      control block, in the slot of the call's parity (a rank one call ahead writes the other
//      slot, so no record a peer still reads is overwritten), with its reason text when it
//      refuses, and where its output is; then it raises its entry mark in every peer, and
//      writes its entry as the pull form's words into every peer (for peers in that form, which
//      read no record and raise no mark: a refusal runs this entry, whatever its peers' form);
//   2. every block waits for every peer's entry mark of the call, or its words;
//   3. every block judges all records with judge(): the same records everywhere, so the same
//      verdict everywhere. Anything but `go` makes every rank skip the call: no data moves and no
//      user memory is touched, on every rank alike, and the ranks go on with the next call. The
//      first block to reach such a verdict raises the rank's `skipped` word to the call, which
//      the call's later stages read (they skip their waits and work, and publish their marks),
//      and records the call in the host block (ipc::failed_call) for the host to report.
// Every other stage
//   1. waits for the stage's signals (slice_wait: a peer finished a phase), one thread per wait
//      in every block, polling the rank's own copy of that peer's word;
//   2. walks the stage's tiles: the user copy, then the copy list, then the reduction list, with
//      the batched kernels' tile functions (gpu/kernels.hpp), so the work is theirs exactly;
//   3. counts its blocks out; the last one publishes the stage's mark into every peer's signal
//      word for this rank (transport/ipc/signals.hpp).
//
// User memory (transport/ipc/user_memory.hpp). The lists are built once per plan against the staged
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
//
// The call counter lives in the rank's control block in device memory, never in an argument:
// a captured graph replays the same arguments, and the counter still tells its calls apart.
//
// Failure (transport/ipc/report.hpp). A wait that outlasts the timeout, that finds its peer's
// abort mark, or that sees, while it waits, another peer's abort mark or this rank's host raise
// its flag (a dead peer process, abort()), makes the rank give up: the first thread to do so
// writes its alarm into every peer's control block and raises its abort mark there at once
// (before its host can see the report and perhaps end the process), then writes the report
// (host memory mapped into the device, so the host reads it without synchronizing). The rank's
// sticky `aborted` word holds the call it gave up in: from then on every launch of this rank,
// queued ones included, skips its waits and its work, user memory included, and publishes only
// that abort mark, so every peer waiting on this rank stops at once and nothing waits out a
// timeout of its own twice. Nothing spins forever: a dead peer costs one scan of the host's flag.
#pragma once

#include <cstdint>
#include <type_traits>

#include "relay/core/wire.hpp"
#include "relay/gpu/fp8_kernels.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/link_clock.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/transport/agreement.hpp"
#include "relay/transport/ipc/ll_plan.hpp"
#include "relay/transport/ipc/pull_entry.hpp"
#include "relay/transport/ipc/pull_plan.hpp"
#include "relay/transport/ipc/report.hpp"
#include "relay/transport/ipc/signals.hpp"
#include "relay/transport/ipc/stage.hpp"
#include "relay/transport/ipc/stage_trace.hpp"
#include "relay/transport/ipc/user_memory.hpp"

namespace relay::ipc {

// Every rank's control block, an allocation of its own that AMD keeps coherent while kernels run
// (ipc/memory.hpp). signal[q], entries[.][q], alarms[q], texts[q], pull_entries[.][q], the pull
// flags' [q] and ll[.][q] are written by rank q only (its kernels; its host writes its dead mark,
// alarm and text when it aborts), and read here with system-scope loads (signals.hpp); the rest by
// this rank's own launches only.
struct ipc_control {
  std::uint64_t signal[max_ranks];  // rank q's latest mark (raised, never lowered)
  std::uint64_t call;               // calls entered
  std::uint64_t aborted;            // 0, or the call in which this rank gave up; never cleared
  std::uint64_t skipped;            // the last call whose agreement was not `go` (0: none)
  std::uint32_t arrived;            // blocks of the running stage that are done (reset by the last)
  std::uint32_t generation;         // the one-shot kernel's grid barrier: stages passed, ever
  // Where this rank's output of its current call is (ipc_env::out_slot, out_offset), written by
  // its entry before it publishes "entered"; peers read it after waiting for that.
  std::uint64_t out_slot;
  std::uint64_t out_offset;
  entry_record entries[2][max_ranks];      // [s % 2][q]: rank q's record of call s
  ipc::alarm_record alarms[max_ranks];     // [q]: why rank q gave up, before its abort mark
  char texts[max_ranks][ipc::text_bytes];  // [q]: rank q's refusal or abort reason
  // The pull form (transport/ipc/pull.hpp), written by rank q: its entry of call s as
  // self-identifying words ([s % 2][q], transport/ipc/pull_entry.hpp), which the pull form
  // announces with instead of a record and a mark; and per block b of its grid the last call in
  // which that block had its input ready ([0]) and had finished reading this rank's input ([1]).
  std::uint64_t pull_entries[2][max_ranks][ipc::pull_entry_words];
  std::uint64_t pull_flags[2][ipc::max_pull_blocks][max_ranks];
  // Mesh emulation (ipc_env::link_mbps): [q] the clock of link (this rank, q), the time (ns) its
  // last booked tile ends (gpu/link_clock.hpp). Only this rank's kernels book it: a push is
  // written by its sender, so the link's clock lives with the sender.
  std::uint64_t link_clock[max_ranks];
  // The running stage's device trace (ipc/stage_trace.hpp; a build with RELAY_IPC_TRACE=1 only).
  std::uint64_t stage_trace[ipc::trace_points];
  // The ll form (transport/ipc/ll.hpp), written by rank q: its input of call s as words that
  // carry the call ([s % 2][q], transport/ipc/ll_plan.hpp). Last: the other words lie together.
  std::uint64_t ll[2][max_ranks][ipc::ll_slot_words];
};

// A rank's fixed view of the job, passed by value to every launch.
struct ipc_env {
  ipc_control* me = nullptr;
  std::uint64_t* const* outbox = nullptr;  // [ranks]: &signal[this rank] in peer q's area; null
                                           // for this rank
  ipc::host_block* host = nullptr;         // device address of the mapped host block
  std::uint32_t ranks = 0;
  std::uint32_t rank = 0;                  // this rank
  std::uint64_t timeout_ticks = 0;         // of wall_clock()
  std::uint64_t scan_ticks = 0;            // how often a wait looks at every peer's word
  std::uint64_t host_ticks = 0;            // how often it looks at the host's flag
  ipc_control* const* controls = nullptr;  // [ranks]: rank q's control block, in this process
  // [ranks][ipc::max_registrations]: where rank q's registered allocation starts in this process
  // (0: no registration in that slot).
  const std::uint64_t* registrations = nullptr;
  // This call's places: deltas from the staged input and output to the caller's buffers (0 when
  // staged), and the output's registration slot + 1 (0: staged) and its offset from that
  // allocation's start, which the entry publishes.
  std::int64_t in_delta = 0, out_delta = 0;
  std::uint64_t out_slot = 0, out_offset = 0;
  // The pull form's input place, which its entry words carry to every peer: its registration
  // slot + 1 (0: staged) and offset; in_place: the caller's input and output overlap, so the
  // staged input is read by the peers and this rank waits for its own copy.
  std::uint64_t in_slot = 0, in_offset = 0;
  // A captured call's input place, read at each replay (transport/ipc/graph_inputs.hpp): where
  // its word names a registration, in_slot and in_offset become that and nothing is staged; null
  // for every call not captured with a staged input.
  const std::uint64_t* in_word = nullptr;
  std::uint32_t in_place = 0;
  // Mesh emulation's link rate (ipc::options::emulate_mesh) in MB/s (10^6 bytes per second): the
  // stages' paced pushes are booked on the links' clocks at this rate (ipc_paced_pushes, in the
  // step kernel's Paced form only); 0: no emulation. 32 bits in what was the padding before
  // `record`: every launch's arguments keep their size.
  std::uint32_t link_mbps = 0;
  entry_record record;  // this rank's word in the call's agreement (sequence: set by the entry)
  // 1: some rank is on another device, so marks are ordered at system scope; 0: every rank
  // shares this device, and device scope suffices for the fences, acquire loads and atomics
  // (transport/ipc/signals.hpp).
  std::uint32_t system = 1;
  // Non-zero for a later piece of a call in pieces (plan/pieces.hpp): void where the call's first
  // piece was skipped (ipc_void_piece).
  std::uint32_t piece = 0;
};

// A wait's rare paths (its look at the clock, the peers' words and the host's flag; every way of
// giving up; a verdict other than `go`) are compiled once, out of line, rather than into each of a
// kernel's waits: inlined, they made the pull kernel 160 KB of code around a few hot instructions
// (79 KB now, a pair's own sum included; bench/results/2026-12-03-h200-pair-sum). Their
// `const ipc_env&` names the kernel's own argument, which must not be copied to the stack for it
// (every later read of a modified copy went through local memory): kernels take their env as a
// grid constant (CUDA; HIP's kernel arguments are in memory already), read in place.
#define RELAY_IPC_COLD __attribute__((noinline))
#if defined(RELAY_GPU_HIP)
#define RELAY_IPC_GRID_CONSTANT
#else
#define RELAY_IPC_GRID_CONSTANT __grid_constant__
#endif

namespace detail {

// Word-wise copies through volatile pointers: the structs cross to peers' memory and to mapped
// host memory, and no load or store may be cached or merged away.
template <class T>
__device__ inline void ipc_copy(volatile T* dst, const volatile T* src) {
  static_assert(sizeof(T) % 8 == 0 && alignof(T) >= 8);
  auto* d = reinterpret_cast<volatile std::uint64_t*>(dst);
  const auto* s = reinterpret_cast<const volatile std::uint64_t*>(src);
  for (std::size_t i = 0; i < sizeof(T) / 8; ++i)
    d[i] = s[i];
}
__device__ inline void ipc_copy_text(volatile char* dst, const volatile char* src) {
  auto* d = reinterpret_cast<volatile std::uint64_t*>(dst);
  const auto* s = reinterpret_cast<const volatile std::uint64_t*>(src);
  for (int i = 0; i < ipc::text_bytes / 8; ++i)
    d[i] = s[i];
}

__device__ inline std::uint64_t ipc_aborted(const ipc_env& env) {
  return *static_cast<volatile std::uint64_t*>(&env.me->aborted);
}

// This rank's mark for every peer (not itself), after everything this thread stored before.
__device__ inline void ipc_raise_all(const ipc_env& env, std::uint64_t mark) {
  signal_release(env.system != 0);
  for (std::uint32_t q = 0; q < env.ranks; ++q)
    if (env.outbox[q] != nullptr) signal_raise(env.outbox[q], mark, env.system != 0);
}

// Gives up in `call`: the first caller wins, tells every peer (its alarm where `first` names a
// failure, then its abort mark), then writes the report; later callers only find `aborted` set.
// `text` (may be null): the reason text the report carries.
RELAY_IPC_COLD __device__ inline void ipc_give_up(const ipc_env& env, std::uint32_t code,
                                                  const ipc::alarm_record& first, std::uint32_t via,
                                                  std::uint64_t call, const volatile char* text) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(&env.me->aborted), 0ull,
                static_cast<unsigned long long>(call)) != 0ull)
    return;
  if (first.code != ipc::report_ok)
    for (std::uint32_t q = 0; q < env.ranks; ++q)
      if (q != env.rank) ipc_copy(&env.controls[q]->alarms[env.rank], &first);
  ipc_raise_all(env, signal_mark(call, signal_abort));
  volatile ipc::report* r = &env.host->rep;
  r->via = via;
  r->call = call;
  ipc_copy(&r->first, &first);
  if (text != nullptr) ipc_copy_text(r->text, text);
  __threadfence_system();
  r->code = code;
}

// The alarm that waiting for `w` of `call` gives when it fails this way.
__device__ inline ipc::alarm_record ipc_alarm_of(const ipc_env& env, std::uint32_t code,
                                                 std::uint32_t peer, const ipc_wait& w,
                                                 std::uint64_t call) {
  ipc::alarm_record a;
  a.code = code;
  a.by = env.rank;
  a.peer = peer;
  a.phase = w.phase;
  a.step = w.step;
  a.kind = w.kind;
  a.call = call;
  return a;
}

// Peer q gave up (its abort or dead mark): this rank gives up too and passes q's alarm on, so
// that every rank names the rank that failed first.
RELAY_IPC_COLD __device__ inline void ipc_peer_failed(const ipc_env& env, std::uint32_t q,
                                                      std::uint64_t call) {
  ipc::alarm_record first;
  ipc_copy(&first, &env.me->alarms[q]);
  const bool named = first.code != ipc::report_ok;  // else its alarm has not landed: its mark alone
  ipc_give_up(env, ipc::report_peer_gave_up, first, q, call,
              named && first.code == ipc::report_aborted ? env.me->texts[first.by] : nullptr);
}

// Whether `call` is one this rank's agreement skipped (its later stages then skip too).
__device__ inline bool ipc_skipped(const ipc_env& env, std::uint64_t call) {
  return *static_cast<volatile std::uint64_t*>(&env.me->skipped) == call;
}

// Whether this launch is a later piece of a call whose first piece this rank skipped (the last
// call it entered): void, on every rank alike (each skipped that first piece): it enters nothing,
// advances no counter and raises no mark (transport/transport.hpp). Read by every block of an
// entry before anything else; nothing writes these words while it runs.
__device__ inline bool ipc_void_piece(const ipc_env& env) {
  if (env.piece == 0) return false;
  const std::uint64_t last = *static_cast<volatile std::uint64_t*>(&env.me->call);
  return last != 0 && ipc_skipped(env, last);
}

// Whether peer q gave up on `call` (a look at this rank's own copy of its word); if so this rank
// gives up too (true).
__device__ inline bool ipc_peer_gave_up(const ipc_env& env, std::uint32_t q, std::uint64_t call) {
  const std::uint64_t v = signal_peek(&env.me->signal[q]);
  if (!signal_aborted(v)) return false;  // the cheap test first (a dead mark reads aborted too)
  signal_acquire(env.system != 0);
  const bool alarmed =
      *static_cast<volatile std::uint32_t*>(&env.me->alarms[q].code) != ipc::report_ok;
  if (!peer_gave_up(v, call, alarmed)) return false;
  ipc_peer_failed(env, q, call);
  return true;
}
// While waiting: the same for every other peer.
__device__ inline bool ipc_peers_gave_up(const ipc_env& env, std::uint64_t call) {
  for (std::uint32_t q = 0; q < env.ranks; ++q)
    if (q != env.rank && ipc_peer_gave_up(env, q, call)) return true;
  return false;
}

// While waiting for `w`: whether this rank's host raised its flag (a peer process is gone, or
// abort()); if so this rank gives up (true). Host memory: read less often than the peers' words.
RELAY_IPC_COLD __device__ inline bool ipc_host_raised(const ipc_env& env, const ipc_wait& w,
                                                      std::uint64_t call) {
  volatile ipc::alarm_record* raised = &env.host->raised;
  if (raised->code == ipc::report_ok) return false;
  __threadfence_system();
  ipc::alarm_record a;
  ipc_copy(&a, raised);
  if (a.code == ipc::report_peer_exited) {
    a.phase = w.phase;  // what this rank waited for then (the dead peer, or one waiting on it)
    a.step = w.step;
    a.kind = w.kind;
  }
  a.call = call;
  ipc_give_up(env, a.code, a, env.rank, call, nullptr);
  return true;
}

// Polls of a word between looks at this rank's sticky word and the clock: a poll is one load,
// so the wait notices its mark a load after it lands rather than a clock read and two loads.
inline constexpr std::uint32_t ipc_spins_per_look = 16;

// A wait's look beyond its own word, every scan_ticks (`start`: 0 before the first): whether
// another peer gave up, this rank's host raised its flag, or the wait timed out; if so this rank
// gives up (true).
RELAY_IPC_COLD __device__ inline bool ipc_wait_tick(const ipc_env& env, const ipc_wait& w,
                                                    std::uint64_t call, std::uint64_t& start,
                                                    std::uint64_t& scan, std::uint64_t& host) {
  const std::uint64_t now = wall_clock();
  if (start == 0) {
    start = now;
    scan = now + env.scan_ticks;
    host = now + env.host_ticks;
  }
  if (now < scan) return false;
  scan = now + env.scan_ticks;
  if (ipc_peers_gave_up(env, call)) return true;
  if (now >= host) {
    host = now + env.host_ticks;
    if (ipc_host_raised(env, w, call)) return true;
  }
  if (now - start > env.timeout_ticks) {
    ipc_give_up(env, ipc::report_timed_out,
                ipc_alarm_of(env, ipc::report_timed_out, w.peer, w, call), env.rank, call, nullptr);
    return true;
  }
  return false;
}

// Polls until the peer's mark satisfies `given` of `call` (true), the peer fails, this rank gives
// up (any block's thread), another peer gives up, this rank's host raises its flag, or the
// timeout. The wait is copied first: its poll loop loads nothing but words peers write (what
// tests/gpu/transport/ipc/signal_isa.py checks in the AMD code objects).
__device__ inline bool ipc_wait_for(const ipc_env& env, const ipc_wait& given, std::uint64_t call) {
  const ipc_wait w = given;
  const std::uint64_t* word = &env.me->signal[w.peer];
  const volatile std::uint64_t* sequence = &env.me->entries[call & 1][w.peer].sequence;
  std::uint64_t start = 0, scan = 0, host = 0;
  std::uint32_t spins = 0;
  for (;;) {
    const std::uint64_t v = signal_poll(word, env.system != 0);
    bool entered = false;
    if (w.phase < 0 && signal_aborted(v) && signal_call(v) == call)
      entered = *sequence == call;  // its record, written before the mark
    const mark_reading m = read_mark(v, call, w.done, entered);
    if (m == mark_reading::reached) return true;
    if (m == mark_reading::failed) {
      ipc_peer_failed(env, w.peer, call);
      return false;
    }
    signal_backoff(++spins);
    if (spins % ipc_spins_per_look != 0) continue;
    if (ipc_aborted(env) != 0 || ipc_wait_tick(env, w, call, start, scan, host)) return false;
  }
}

// Polls a flag of the pull form (ipc_control::pull_flags, written by peer w.peer alone, plain
// stores of call numbers) until it reaches `call`; its failures as ipc_wait_for's, the peer's own
// abort or dead mark seen by the scan of every peer's word. True when the flag was reached.
__device__ inline bool ipc_wait_flag(const ipc_env& env, const std::uint64_t* flag,
                                     const ipc_wait& w, std::uint64_t call) {
  std::uint64_t start = 0, scan = 0, host = 0;
  std::uint32_t spins = 0;
  for (;;) {
    if (signal_poll(flag, env.system != 0) >= call) return true;
    signal_backoff(++spins);
    if (spins % ipc_spins_per_look != 0) continue;
    if (ipc_aborted(env) != 0 || ipc_wait_tick(env, w, call, start, scan, host)) return false;
  }
}

// A wait of this rank's own blocks that never became resident gives up for the rank, naming it.
RELAY_IPC_COLD __device__ inline void ipc_own_timed_out(const ipc_env& env, std::uint64_t call) {
  ipc_wait w;
  w.peer = env.rank;
  w.phase = 0;
  w.kind = ipc::wait_barrier;
  ipc_give_up(env, ipc::report_timed_out,
              ipc_alarm_of(env, ipc::report_timed_out, env.rank, w, call), env.rank, call, nullptr);
}

// A wait of this rank's own blocks (the one-shot kernel's grid barrier, the pull kernel's count of
// its blocks), polling `done()` (a word of this device) with backoff: true once it holds, false
// once the call's deadline passed, when this rank gives up (a block of its kernel was never
// resident: other work filled the device), its abort marks telling every peer.
template <class Done>
__device__ inline bool ipc_wait_own(const ipc_env& env, std::uint64_t call, Done&& done) {
  std::uint64_t start = 0;
  for (std::uint32_t polls = 1;; ++polls) {
    if (done()) return true;
    signal_backoff(polls);
    if (polls % ipc_spins_per_look != 0) continue;
    const std::uint64_t now = wall_clock();
    if (start == 0) {
      start = now;
    } else if (now - start > env.timeout_ticks) {
      ipc_own_timed_out(env, call);
      return false;
    }
  }
}

// This block's part of a stage before its work: every wait (one thread each), then whether the
// rank has given up, the same answer for every thread of the block.
template <int Block>
__device__ inline bool ipc_stage_waits(const ipc_env& env, const ipc_stage& s, std::uint64_t call,
                                       std::uint32_t& give_up) {
  // A call the agreement skipped: no waits, no work, on every rank alike.
  if (threadIdx.x == 0) give_up = ipc_skipped(env, call) ? 1u : 0u;
  __syncthreads();
  if (give_up != 0) return true;
  for (std::uint32_t i = threadIdx.x; i < s.wait_count; i += Block)
    if (ipc_aborted(env) == 0) ipc_wait_for(env, s.waits[i], call);
  __syncthreads();
  if (threadIdx.x == 0) {
    // The call's last stage: a peer that gave up on this call while this rank did its part (it
    // needed nothing more from that peer) makes this rank give up too, before its output is
    // written, so that no rank ends a call ok that a peer failed.
    if (s.leave != 0 && ipc_aborted(env) == 0) (void)ipc_peers_gave_up(env, call);
    give_up = ipc_aborted(env) != 0 ? 1u : 0u;
  }
  __syncthreads();
  return give_up != 0;
}

// A block's copy of every rank's entry record (shared memory, uninitialized: raw bytes).
struct ipc_entry_shared {
  alignas(8) unsigned char bytes[max_ranks * sizeof(entry_record)];
  __device__ entry_record* records() { return reinterpret_cast<entry_record*>(bytes); }
};

// This rank's entry of `call` as self-identifying words (transport/ipc/pull_entry.hpp) into a
// peer's control block `peer`, in the slot of the call's parity: its record and where its input
// is. Whatever must be seen with them (a reason text, the output's place) is the caller's to fence
// before.
__device__ inline void ipc_write_entry_words_into(ipc_control* peer, const ipc_env& env,
                                                  std::uint64_t call) {
  ipc::pull_entry e;
  e.record = env.record;
  e.in_slot = env.in_slot;
  e.in_offset = env.in_offset;
  std::uint64_t words[ipc::pull_entry_words];
  ipc::pull_entry_encode(call, e, words);
  std::uint64_t* w = peer->pull_entries[call & 1][env.rank];
#pragma unroll
  for (int i = 0; i < ipc::pull_entry_words; ++i)
    signal_store(&w[i], words[i]);
}
// The same into peer q's, as env.controls names it.
__device__ inline void ipc_write_entry_words(const ipc_env& env, std::uint32_t q,
                                             std::uint64_t call) {
  ipc_write_entry_words_into(env.controls[q], env, call);
}

// Whether peer q's entry words in this rank's control block all name `call` (one poll, no
// ordering); then `e` is the entry they carry. The reader of both forms' entry waits.
__device__ inline bool ipc_read_entry_words(const ipc_env& env, std::uint32_t q, std::uint64_t call,
                                            ipc::pull_entry& e) {
  const std::uint64_t* w = env.me->pull_entries[call & 1][q];
  std::uint64_t words[ipc::pull_entry_words];
#pragma unroll
  for (int i = 0; i < ipc::pull_entry_words; ++i)
    words[i] = signal_peek(&w[i]);
  return ipc::pull_entry_decode(call, words, e);
}

// The entry's first part (see the top), by one thread of the rank: this rank's record (and
// reason text when it refuses) into every rank's control block, and where its output is; then its
// entry mark to every peer (its abort mark once it has given up); then its entry words to every
// peer, after the mark's fence. The words are for peers in the pull form, which raises no entry
// mark and reads no record: without them a rank that refuses (its refusal runs this entry) or
// calls with another plan would leave such peers waiting until the timeout instead of telling them.
// `gave_up`: this rank's sticky word as the caller read it (0: it has not given up).
__device__ inline void ipc_announce(const ipc_env& env, std::uint64_t call, std::uint64_t gave_up) {
  const std::uint32_t me = env.rank, parity = static_cast<std::uint32_t>(call & 1);
  entry_record mine = env.record;
  mine.sequence = call;
  if (gave_up == 0) {
    for (std::uint32_t q = 0; q < env.ranks; ++q) {
      ipc_copy(&env.controls[q]->entries[parity][me], &mine);
      if (mine.code != 0) ipc_copy_text(env.controls[q]->texts[me], env.host->own_text);
    }
    *static_cast<volatile std::uint64_t*>(&env.me->out_slot) = env.out_slot;
    *static_cast<volatile std::uint64_t*>(&env.me->out_offset) = env.out_offset;
  }
  ipc_raise_all(env, gave_up == 0 ? signal_mark(call, 0) : signal_mark(gave_up, signal_abort));
  if (gave_up == 0)
    for (std::uint32_t q = 0; q < env.ranks; ++q)
      if (q != me) ipc_write_entry_words(env, q, call);
}

// The entry wait of the plan's kernels for peer q: its entry mark, then its record from its slot,
// or its entry words naming this call, which are all a peer in the pull form writes (then the
// record is theirs). A peer whose words are seen entered even if its mark says it gave up since
// (on its verdict). Its failures are ipc_wait_for's. True when q entered; `record` is its record.
__device__ inline bool ipc_wait_entry(const ipc_env& env, std::uint32_t q, std::uint64_t call,
                                      entry_record& record) {
  const std::uint64_t* word = &env.me->signal[q];
  const volatile std::uint64_t* sequence = &env.me->entries[call & 1][q].sequence;
  ipc_wait w;
  w.peer = q;
  auto words_name_call = [&]() {
    ipc::pull_entry e;
    if (!ipc_read_entry_words(env, q, call, e)) return false;
    signal_acquire(env.system != 0);  // what q wrote before them (its reason text)
    record = e.record;
    return true;
  };
  std::uint64_t start = 0, scan = 0, host = 0;
  std::uint32_t spins = 0;
  for (;;) {
    const std::uint64_t v = signal_poll(word, env.system != 0);
    bool entered = false;
    if (signal_aborted(v) && signal_call(v) == call) {
      entered = *sequence == call;  // its record or words, written before the mark
      if (!entered && words_name_call()) return true;
    }
    const mark_reading m = read_mark(v, call, 0, entered);
    if (m == mark_reading::reached) {
      ipc_copy(&record, &env.me->entries[call & 1][q]);
      return true;
    }
    if (m == mark_reading::failed) {
      ipc_peer_failed(env, q, call);
      return false;
    }
    if (words_name_call()) return true;
    signal_backoff(++spins);
    if (spins % ipc_spins_per_look != 0) continue;
    if (ipc_aborted(env) != 0 || ipc_wait_tick(env, w, call, start, scan, host)) return false;
  }
}

// A verdict other than `go`: the call is skipped on every rank (each judges the same records).
// The first block of this rank to reach it raises `skipped` to the call and records the call in
// the host block's ring (out of line: no call that goes on runs it). Calls run one after another
// on a rank, so one block at a time writes the ring.
RELAY_IPC_COLD __device__ inline void ipc_skip_call(const ipc_env& env, std::uint64_t call,
                                                    const verdict& v, const entry_record* records) {
  if (atomicMax(reinterpret_cast<unsigned long long*>(&env.me->skipped),
                static_cast<unsigned long long>(call)) >= call)
    return;
  volatile ipc::host_block* h = env.host;
  const std::uint64_t n = h->failed_written;
  volatile ipc::failed_call* f = &h->failed[n % ipc::failed_call_slots];
  f->call = call;
  ipc::note_verdict(f->verdict, v, records, static_cast<int>(env.ranks));
  if (v.kind == verdict_kind::refused_by_peer)
    ipc_copy_text(f->text, env.me->texts[v.rank]);
  else
    f->text[0] = 0;
  __threadfence_system();
  h->failed_written = n + 1;
}

// The verdict of every rank's record (`records`, shared, indexed by rank), judged by thread 0 of
// the block once every thread has stored its part: true when the call stops here (`stopped`: a
// wait of the block failed or the rank had given up; else the verdict is not `go`: the call is
// skipped, ipc_skip_call), the same answer for every thread of the block.
__device__ inline bool ipc_decide(const ipc_env& env, std::uint64_t call, std::uint32_t& give_up,
                                  const entry_record* records, bool stopped) {
  if (threadIdx.x == 0) {
    const std::uint32_t me = env.rank;
    if (!stopped) {
      const verdict v = judge(records, static_cast<int>(env.ranks), static_cast<int>(me));
      if (v.kind != verdict_kind::go) ipc_skip_call(env, call, v, records);
      give_up = v.kind != verdict_kind::go ? 1u : 0u;
    } else {
      give_up = 1;
    }
  }
  __syncthreads();
  return give_up != 0;
}

// The entry's second part, this block's: every peer's entry (ipc_wait_entry), then the verdict of
// judge(); true when the rank gives up (the verdict is not `go`, or a wait failed), the same
// answer for every thread of the block.
template <int Block>
__device__ inline bool ipc_judge_entries(const ipc_env& env, std::uint64_t call,
                                         std::uint32_t& give_up, ipc_entry_shared& shared) {
  const std::uint32_t me = env.rank;
  // Each peer's record is read by the thread that saw its mark or its words; this rank's own is
  // its env's.
  entry_record* records = shared.records();
  __shared__ std::uint32_t missing;  // some wait failed
  if (threadIdx.x == 0) missing = 0;
  __syncthreads();
  for (std::uint32_t q = threadIdx.x; q < env.ranks; q += Block) {
    if (q == me) {
      records[q] = env.record;
      records[q].sequence = call;
      continue;
    }
    if (!ipc_wait_entry(env, q, call, records[q])) missing = 1;
  }
  __syncthreads();
  return ipc_decide(env, call, give_up, records, missing != 0 || ipc_aborted(env) != 0);
}

// The entry's agreement (see the top), this block's part: true when the rank gives up.
template <int Block>
__device__ inline bool ipc_enter(const ipc_env& env, std::uint64_t call, std::uint32_t& give_up,
                                 ipc_entry_shared& shared) {
  if (blockIdx.x == 0 && threadIdx.x == 0) ipc_announce(env, call, ipc_aborted(env));
  return ipc_judge_entries<Block>(env, call, give_up, shared);
}

}  // namespace detail

namespace detail {

// After the stage's waits, every thread of the block: the delta of each tag into `delta`
// (shared). A peer's output place is read only for the peers the stage pushes into, whose entry
// into this call the slice's waits have seen by now (in this stage or an earlier one), so the
// place is this call's: the peer writes the next call's only after its exit, which waits for this
// stage's pushes.
template <int Block, bool Paced = false>
__device__ inline void ipc_stage_deltas(const ipc_env& env, const ipc_stage& s,
                                        std::int64_t* delta) {
  if (s.copy_tags == nullptr && s.reduce_tags == nullptr && (!Paced || s.paced_moves == 0)) return;
  for (std::uint32_t i = threadIdx.x; i < 3 + env.ranks; i += Block) {
    std::int64_t d = 0;
    if (i == ipc::tag_my_input) {
      d = env.in_delta;
    } else if (i == ipc::tag_my_output) {
      d = env.out_delta;
    } else if (i >= ipc::tag_peer_output && ((s.push_mask >> (i - ipc::tag_peer_output)) & 1)) {
      const std::uint32_t q = i - ipc::tag_peer_output;
      const ipc_control* c = env.controls[q];
      const std::uint64_t slot = signal_poll(&c->out_slot, env.system != 0);
      if (slot != 0) {
        const std::uint64_t start = env.registrations[q * ipc::max_registrations + slot - 1];
        const std::uint64_t offset = signal_poll(&c->out_offset, env.system != 0);
        d = static_cast<std::int64_t>(start + offset - s.peer_out[q]);
      }
    }
    delta[i] = d;
  }
  __syncthreads();
}

template <int Block, int Unroll>
__device__ inline void ipc_moved_copy_tile(const ipc_stage& s, std::uint64_t t,
                                           const std::int64_t* delta) {
  const std::uint32_t i = gpu::detail::find_desc(s.copies, s.copy_count, t);
  gpu::copy_desc c = s.copies[i];
  const ipc_copy_tags g = s.copy_tags[i];
  c.src += delta[g.src];
  c.dst += delta[g.dst];
  gpu::copy_desc_tile<Block, Unroll, false>(c, t - c.first_tile);
}

template <class T, int Block, int Unroll>
__device__ inline void ipc_moved_reduce_tile(const ipc_stage& s, std::uint64_t t,
                                             const std::int64_t* delta) {
  const std::uint32_t i = gpu::detail::find_desc(s.reduces, s.reduce_count, t);
  gpu::reduce_desc r = s.reduces[i];
  const ipc_reduce_tags& g = s.reduce_tags[i];
  r.dst = static_cast<unsigned char*>(r.dst) + delta[g.dst];
  for (int k = 0; k < r.k; ++k)
    r.src[k] = static_cast<const unsigned char*>(r.src[k]) + delta[g.src[k]];
  gpu::reduce_desc_tile<T, Block, Unroll>(r, t - r.first_tile);
}

template <class E, fp8_format F>
__device__ inline void ipc_fp8_end(const gpu::fp8_desc& d, bool dequantize, std::uint64_t tile) {
  if (dequantize)
    gpu::detail::fp8_dequantize_tile<E, F, gpu::fp8_conversion::fast, false, gpu::fp8_unroll>(
        static_cast<const unsigned char*>(d.src), d.count, static_cast<E*>(d.dst), nullptr, tile);
  else
    gpu::detail::fp8_quantize_tile<E, F, gpu::fp8_conversion::fast, gpu::fp8_unroll>(
        static_cast<const E*>(d.src), static_cast<unsigned char*>(d.dst), d.count, tile);
}

// Tile t of the stage's fp8 list w: E is T for list 0, float (partial sums) for list 1.
template <class T>
__device__ inline void ipc_fp8_tile(const ipc_stage& s, int w, std::uint64_t t) {
  const gpu::fp8_desc& d = s.fp8[w][gpu::detail::find_desc(s.fp8[w], s.fp8_count[w], t)];
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

// Tile t of a user copy: of its one run, or of run t / run_tiles, cut here.
template <int Block, int Unroll>
__device__ inline void ipc_user_tile(const user_runs& u, std::uint64_t t) {
  if (u.runs == 1) {
    gpu::copy_desc_tile<Block, Unroll, false>(u.first, t);
    return;
  }
  const std::uint64_t k = t / u.run_tiles;
  const gpu::copy_desc c =
      gpu::make_copy(u.first.src + k * u.src_stride, u.first.dst + k * u.dst_stride, u.run_bytes);
  gpu::copy_desc_tile<Block, Unroll, false>(c, t - k * u.run_tiles);
}

// Paced tile t of `c`, moved by the block: at once (parts 1), else as `parts` of the kernel's own
// copy tiles, one after another (`moves` of them in all). Out of line: the walk around it holds
// the clock's waits, and its loads are data, not the polls of a wait.
__attribute__((noinline)) __device__ inline void ipc_paced_move(const gpu::copy_desc& c,
                                                                std::uint64_t t,
                                                                std::uint32_t parts,
                                                                std::uint64_t moves) {
  if (parts <= 1) {
    gpu::copy_desc_tile<gpu::paced_block, gpu::paced_unroll, false>(c, t);
    return;
  }
  for (std::uint64_t k = t * parts; k < (t + 1) * parts && k < moves; ++k)
    gpu::copy_desc_tile<gpu::default_block, gpu::default_unroll, false>(c, k);
}

// Mesh emulation (ipc_env::link_mbps): this block's part of the stage's pushes into peers, every
// tile booked on this rank's clock of its link (gpu/link_clock.hpp), as the GPU executor's paced
// copy books its links. Each push has s.paced_blocks walkers: walker w moves tiles w % per,
// + per, ... of push w / per, and block b is walkers b, b + grid, ... Thread 0 books the tile and
// waits for its slot while the other threads wait at the barrier; then all move it at once, all
// 64 KiB in flight (the paced copy's unroll), so that a walker's move, booking and wake-up stay
// within the two slots its link's other walker covers (s.paced_parts > 1: as four of the kernel's
// own 16 KiB copy tiles, one after another, for diagnosis). Out of line, the wide move raises only
// the Paced form's registers, to the one-shot kernel's, so no grid shrinks. The block goes on only
// after its last slot's finish, so the stage's mark is raised no earlier than a link of the rate
// would have delivered its bytes. Every wait is on the clock, never on another block. Compiled
// once, out of line: it does not depend on the element type. Only the step kernel's Paced form
// calls it (ipc_step_kernel).
__attribute__((noinline)) __device__ inline void ipc_paced_pushes(const ipc_env& env,
                                                                  const ipc_stage& s,
                                                                  const std::int64_t* delta) {
  constexpr std::uint64_t move_units = std::uint64_t{gpu::default_block} * gpu::default_unroll;
  // A paced tile is 4 of the kernel's copy tiles (stage.hpp: paced_parts).
  static_assert(gpu::paced_tile_units == 4 * move_units && gpu::paced_block == gpu::default_block);
  const std::uint32_t per = s.paced_blocks, parts = s.paced_parts;  // read once, before the waits
  const std::uint64_t walkers = std::uint64_t{s.paced_count} * per;
  const std::uint64_t rate = std::uint64_t{env.link_mbps} * 1'000'000;  // bytes per second
  std::uint64_t finish = 0;                                             // thread 0's last slot
  paced_tally tally;  // thread 0's, where the build traces stages (ipc/stage_trace.hpp)
  for (std::uint64_t w = blockIdx.x; w < walkers; w += gridDim.x) {
    const ipc_paced_copy& push = s.paced[w / per];
    gpu::copy_desc c = push.copy;
    if (s.paced_moves != 0) {
      c.src += delta[push.tags.src];
      c.dst += delta[push.tags.dst];
    }
    std::uint64_t* link = &env.me->link_clock[push.link];
    const std::uint64_t tiles = gpu::tiles_for(c.units, gpu::paced_tile_units);
    const std::uint64_t moves = gpu::tiles_for(c.units, move_units);
    for (std::uint64_t t = w % per; t < tiles; t += per) {
      if (threadIdx.x == 0) {
        const std::uint64_t bytes = gpu::tile_bytes(c, t, gpu::paced_tile_units);
        if constexpr (stage_tracing) tally.moved();
        // The clock is a word of this rank's control block, read as the kernels read the words
        // there (signal_poll: at system scope on AMD, docs/amd.md), then booked from that value.
        std::uint64_t freed = 0;
        const gpu::link_slot slot =
            gpu::book_link_from(link, signal_poll(link, env.system != 0), gpu::link_ns(bytes, rate),
                                stage_tracing ? &freed : nullptr);
        gpu::wait_until(slot.start);
        finish = slot.finish;
        if constexpr (stage_tracing) {
          tally.booked(slot, freed, t < per);
          tally.woken();
        }
      }
      __syncthreads();
      ipc_paced_move(c, t, parts, moves);
    }
  }
  if (threadIdx.x == 0) {
    if constexpr (stage_tracing) tally.add_to(env.me->stage_trace);
    gpu::wait_until(finish);
  }
}

// The tiles of a stage's lists a block of a paced launch takes (ipc_stage_work), as its first
// and the stride from there. Where the grid has blocks beyond the walkers, those alone make the
// lists, beside the pushes: a walker's share would wait for its last slot, holding the stage's
// mark (which the peers' next stages wait for) past the links' end by the time one block takes to
// copy it (a stage's local copy of 32 MiB over 33 blocks, 7 of them walkers, ran 170 us past its
// links: bench/results/2026-12-07-h100-mesh-stages). Where every block walks, each takes its
// share after its pushes.
struct ipc_list_share {
  std::uint64_t first = 0, stride = 1;
};
__device__ inline ipc_list_share ipc_paced_list_share(const ipc_stage& s) {
  const std::uint64_t walkers = std::uint64_t{s.paced_count} * s.paced_blocks;
  if (walkers >= gridDim.x) return {blockIdx.x, gridDim.x};
  if (blockIdx.x < walkers) return {~std::uint64_t{0}, 1};  // a walker: none
  return {blockIdx.x - walkers, gridDim.x - walkers};
}

// This block's tiles of a stage, from `first` by `stride` (the grid, but in a paced launch): the
// user copy, then the copy list, then the reduction list, then (Fp8) the fp8 lists.
template <class T, int Block, int Unroll, bool Fp8 = false>
__device__ inline void ipc_stage_work(const ipc_stage& s, const user_runs& user,
                                      std::uint64_t user_tiles, const std::int64_t* delta,
                                      std::uint64_t first, std::uint64_t stride) {
  const std::uint64_t lists = user_tiles + s.copy_tiles;
  const std::uint64_t reduced = lists + s.reduce_tiles;
  const std::uint64_t total = Fp8 ? reduced + s.fp8_tiles[0] + s.fp8_tiles[1] : reduced;
  for (std::uint64_t t = first; t < total; t += stride) {
    if constexpr (Fp8 && fp8_wire_type<T>) {
      static_assert(Block == gpu::fp8_block_threads, "the fp8 tiles assume their own block size");
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
      ipc_user_tile<Block, Unroll>(user, t);
    else if (t < lists && s.copy_tags != nullptr)
      ipc_moved_copy_tile<Block, Unroll>(s, t - user_tiles, delta);
    else if (t < lists)
      gpu::copy_list_tile<Block, Unroll, false>(s.copies, s.copy_count, t - user_tiles);
    else if (s.reduce_tags != nullptr)
      ipc_moved_reduce_tile<T, Block, Unroll>(s, t - lists, delta);
    else
      gpu::reduce_list_tile<T, Block, Unroll>(s.reduces, s.reduce_count, t - lists);
  }
}

// Counts this block out of the stage (after all its threads' stores, into peers' memory too:
// the block barrier orders them before thread 0's release, which is cumulative, so one fence per
// block serves); true in thread 0 of the last block, once every block's work is done (its
// acquire orders the other blocks' stores before the marks it raises).
// A grid of one block needs no counting: the block barrier is the grid's.
__device__ inline bool ipc_last_out(const ipc_env& env) {
  __syncthreads();
  if (threadIdx.x != 0) return false;
  if (gridDim.x == 1) return true;
  signal_release(env.system != 0);
  if (atomicAdd(&env.me->arrived, 1u) != gridDim.x - 1) return false;
  signal_acquire(env.system != 0);
  env.me->arrived = 0;  // for the next stage (a later launch, or after the grid barrier)
  return true;
}

// The last block's epilogue of a stage: the call counter on entry, then the mark to every peer
// (once this rank has given up, its abort mark, of the call it gave up in).
__device__ inline void ipc_publish(const ipc_env& env, const ipc_stage& s, std::uint64_t call) {
  if (s.enter != 0) *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
  const std::uint64_t gave_up = ipc_aborted(env);
  if (gave_up == 0 && s.publish < 0) return;
  ipc_raise_all(env, gave_up != 0 ? signal_mark(gave_up, signal_abort)
                                  : signal_mark(call, static_cast<std::uint64_t>(s.publish)));
}

}  // namespace detail

// One stage of a call (see the top of this file). `user` is the entry's or the exit's copy
// between the user's buffer and the registered area (user_tiles = 0: none). Fp8: the stage has
// fp8 ends (launched for T of an fp8 wire only). Paced: mesh emulation's form, for a stage with
// paced pushes (ipc_paced_pushes before its lists); a form of its own, so that the other forms'
// code and registers are what they are without emulation.
template <class T, int Block = gpu::default_block, int Unroll = gpu::default_unroll,
          bool Fp8 = false, bool Paced = false>
__global__ void __launch_bounds__(Block)
    ipc_step_kernel(const ipc_stage* stage, user_runs user, std::uint64_t user_tiles,
                    const RELAY_IPC_GRID_CONSTANT ipc_env env) {
  __shared__ std::uint32_t give_up;
  __shared__ std::int64_t delta[ipc_delta_count];
  __shared__ detail::ipc_entry_shared entry;  // the entry's only
  const ipc_stage s = *stage;
  if (s.enter != 0 && detail::ipc_void_piece(env)) return;
  detail::stage_trace_mark(env.me->stage_trace, stage_start);
  // Every block reads the counter before the last block of an entry launch advances it.
  const std::uint64_t call =
      *static_cast<volatile std::uint64_t*>(&env.me->call) + (s.enter != 0 ? 1 : 0);
  const bool stop = s.enter != 0 ? detail::ipc_enter<Block>(env, call, give_up, entry)
                                 : detail::ipc_stage_waits<Block>(env, s, call, give_up);
  detail::stage_trace_mark(env.me->stage_trace, stage_waited);
  if (!stop) {
    detail::ipc_stage_deltas<Block, Paced>(env, s, delta);
    if constexpr (Paced) {
      static_assert(Block == gpu::default_block && !Fp8, "paced pushes: native, default blocks");
      detail::ipc_paced_pushes(env, s, delta);
      const detail::ipc_list_share share = detail::ipc_paced_list_share(s);
      detail::ipc_stage_work<T, Block, Unroll>(s, user, user_tiles, delta, share.first,
                                               share.stride);
    } else {
      detail::ipc_stage_work<T, Block, Unroll, Fp8>(s, user, user_tiles, delta, blockIdx.x,
                                                    gridDim.x);
    }
  }
  if (detail::ipc_last_out(env)) {
    if constexpr (stage_tracing) {
      const std::uint64_t end = gpu::device_clock_ns();
      detail::ipc_publish(env, s, call);
      // After the mark, so that the trace's stores to host memory delay no peer.
      detail::stage_trace_flush(env.me->stage_trace,
                                env.host->trace[stage_trace_row(call, s.index)], end);
    } else {
      detail::ipc_publish(env, s, call);
    }
  }
}

// The one-shot form: a whole call (stages[0] the entry, stages[count - 1] the exit) in one
// launch, for small calls where launches cost more than the work. Between stages the blocks meet
// at a grid barrier (the last one in publishes the stage's mark and advances the barrier's
// generation; the others spin on it), so every block must be resident at once: the host keeps
// the grid within one block per multiprocessor, shared among the ranks of the device. A stage
// with no tiles and no mark needs no barrier after it (the entry, where the input is read in
// place: each block did the agreement's waits itself), nor does the last: its blocks count out,
// and the last one advances the call counter (every block read it at its start).
template <class T, int Block = gpu::default_block, int Unroll = gpu::default_unroll>
__global__ void __launch_bounds__(Block)
    ipc_one_shot_kernel(const ipc_stage* stages, std::uint32_t count, user_runs in,
                        std::uint64_t in_tiles, user_runs out, std::uint64_t out_tiles,
                        const RELAY_IPC_GRID_CONSTANT ipc_env env) {
  // give_up by stage parity: a stage's threads read its verdict after its last barrier, and a
  // stage with no work goes on to the next without one, whose thread 0 then writes the other word
  // (the word of stage i is written again at stage i + 2, past stage i + 1's barriers).
  __shared__ std::uint32_t give_up[2], stuck;
  __shared__ std::int64_t delta[ipc_delta_count];
  __shared__ detail::ipc_entry_shared entry;
  if (detail::ipc_void_piece(env)) return;
  if (threadIdx.x == 0) stuck = 0;
  volatile std::uint32_t* generation = &env.me->generation;
  std::uint32_t seen = *generation;  // read by every block before the first barrier moves it
  const std::uint64_t call = *static_cast<volatile std::uint64_t*>(&env.me->call) + 1;
  for (std::uint32_t i = 0; i < count; ++i) {
    const ipc_stage s = stages[i];
    const bool last = i + 1 == count;
    const std::uint64_t user_tiles = i == 0 ? in_tiles : last ? out_tiles : 0;
    const bool stop = i == 0 ? detail::ipc_enter<Block>(env, call, give_up[0], entry)
                             : detail::ipc_stage_waits<Block>(env, s, call, give_up[i & 1]);
    if (!stop) {
      detail::ipc_stage_deltas<Block>(env, s, delta);
      detail::ipc_stage_work<T, Block, Unroll>(s,
                                               i == 0 ? in
                                               : last ? out
                                                      : user_runs{},
                                               user_tiles, delta, blockIdx.x, gridDim.x);
    }
    if (last) {
      if (detail::ipc_last_out(env)) {
        *static_cast<volatile std::uint64_t*>(&env.me->call) = call;
        detail::ipc_publish(env, s, call);
      }
      break;
    }
    if (user_tiles + s.copy_tiles + s.reduce_tiles == 0 && s.publish < 0) continue;
    ipc_stage plain = s;
    plain.enter = 0;       // the counter moves at the last stage
    if (gridDim.x == 1) {  // the block barrier is the grid's
      if (detail::ipc_last_out(env)) detail::ipc_publish(env, plain, call);
      __syncthreads();
      continue;
    }
    if (detail::ipc_last_out(env)) {
      detail::ipc_publish(env, plain, call);
      __threadfence();
      *generation = seen + 1;
    } else if (threadIdx.x == 0) {
      // With its deadline: a block that never became resident (other work filled the device)
      // would hold the others here forever.
      stuck = detail::ipc_wait_own(env, call, [&] { return *generation != seen; }) ? 0u : 1u;
      __threadfence();
    }
    ++seen;
    __syncthreads();
    if (stuck != 0) return;  // gave up for the rank: its abort marks are out
  }
}

}  // namespace relay::ipc
