// The shm transport: CPU processes of one host over one shared-memory segment.
//
// Set-up (collective, make_shm_transport): rank 0 makes the segment, which never has a name
// (shm/segment.hpp: a memfd handed to every rank), so a job killed at any point leaves
// nothing in /dev/shm. The segment holds, per rank, a control block (a phase counter, the call's
// agreement records, the process id, the broken and left flags) and a data area of
// `bytes_per_rank`.
//
// A call: the rank writes its word in the call's agreement (transport/agreement.hpp: its entry
// record, and its reason when it refuses) into its control block and publishes that it entered
// (counter = sequence << 32, release); once every rank has entered (acquire, one deadline) every
// rank judges all the records alike. Only then does data move: the rank copies its user input
// into its data area (staging), runs its slice (memcpy pushes into peers' areas, reductions on
// its own; after each phase it publishes counter = sequence << 32 | phase + 1; slice waits
// acquire peers' counters), waits for its slice's exit waits, and copies its output out of the
// segment. Staging means in place and out of place run the same plan, and user memory is only
// ever touched by its own rank: read once, written once, and not at all when the verdict is not
// to go.
//
// Waits spin briefly, then yield, then sleep in short intervals; every wait has the call's
// timeout and checks every peer every few milliseconds (its process, whether it closed its
// transport, whether it gave up: the flag a rank raises in its control block when it breaks), so
// a failure anywhere is an error everywhere within milliseconds, a stalled peer after the timeout.
//
// One outcome per call. Whether every rank entered a call is decided once, for the whole job, by
// one word in the segment's header: the first rank that sees every rank enter and the first that
// gives up waiting for one compare-and-swap it, and whichever wins decides for all. A late rank
// therefore never goes on with a call a peer already failed, and a rank whose deadline passed
// just as the last peer entered goes on with the others. A failure after every rank entered (a
// peer that dies or stalls mid-call) is found by the ranks that wait on that peer; every rank
// also looks at its peers' flags once more before it writes its output, so a rank that finishes
// after a peer gave up on the call returns that peer's error and writes nothing. What remains is
// a window: a peer that gives up after this rank returned (docs/multiprocess.md, "One outcome
// per call"); then the next call fails on every rank at once, naming it.
//
// Deferred verdicts (shm_options::deferred_verdicts): the stream transports' contract modelled on
// the CPU, for tests of what is built over a transport (the communicator, the C ABI, Python's
// work objects): run() returns ok for a call that a peer refused or that ranks called differently
// (a rank's own refusal it returns at once), as an ipc rank whose device judges later does, and
// take_failed_call() reports it afterwards; judges_on_host() is false. Nothing else changes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/plan/area_layout.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/host_ops.hpp"
#include "relay/plan/validate.hpp"
#include "relay/transport/processes.hpp"
#include "relay/transport/shm/segment.hpp"
#include "relay/transport/shm/wait.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

namespace shm {

// Where a plan puts rank r's input, output and scratch in its data area: the same on every rank.
using relay::area_layout;
using relay::layout_of;

class transport final : public relay::transport {
 public:
  explicit transport(int rank, bool deferred_verdicts = false)
      : rank_(rank), deferred_(deferred_verdicts) {}
  segment& seg() { return seg_; }

  std::string_view name() const override { return "shm"; }
  bool judges_on_host() const override { return !deferred_; }
  status take_failed_call() override {
    if (failed_calls_.empty()) return {};
    status s = std::move(failed_calls_.front());
    failed_calls_.pop_front();
    return s;
  }
  // Rank 0's RELAY_SHM_BYTES (segment::open): one number for the job.
  std::uint64_t area_bytes() const override { return seg_.bytes_per_rank(); }
  bool broken() const override { return !broken_.ok(); }
  status async_status() const override { return broken_; }
  // Between calls: peers still finishing the last call may do so; the next fails everywhere.
  void abort(const status& why) override {
    give_up(why.ok() ? failure{errc::peer_error, rank_, rank_,
                               "rank " + std::to_string(rank_) + " aborted", next_call_}
                     : failure{why.code(), why.peer(), rank_, why.message(), next_call_});
  }

  status run(const call_context& given) override {
    if (!broken_.ok()) return broken_;
    // A later piece of a call whose first piece did not go is void (transport.hpp).
    if (given.piece > 0 && skipped_) return {};
    // The fp8 wire runs as on the host executor (host_run_op): the sender quantizes into its
    // send slot, pushes the image into the receiver's slot and dequantizes it into the
    // destination; the slice orders the slots' reuse across phases (plan/slice.hpp).
    // Numbered by this transport's own count of calls, which void pieces do not advance.
    call_context call = given;
    call.sequence = ++sequence_;
    failed_ = {};
    refused_here_ = false;
    next_call_ = call.sequence + 1;
    status s = run_call(call);
    if (failed_.code == errc::ok) skipped_ = !s.ok();  // else broken: nothing follows
    if (failed_.code != errc::ok) {
      give_up(failed_);  // the ranks are out of step
    } else if (!s && deferred_ && !refused_here_) {
      failed_calls_.push_back(std::move(s));  // as a device reports it, later
      return {};
    }
    return s;
  }

  ~transport() override {
    // A rank that closes its transport has left the job: its exit is no failure of a call.
    if (seg_.mapped())
      std::atomic_ref<std::uint32_t>(seg_.control_of(rank_).left)
          .store(1, std::memory_order_release);
  }

 private:
  std::uint64_t mark(std::uint64_t sequence, std::int64_t phases_done) const {
    return sequence << 32 | static_cast<std::uint64_t>(phases_done);
  }
  void publish(std::uint64_t value) {
    std::atomic_ref<std::uint64_t>(seg_.control_of(rank_).counter)
        .store(value, std::memory_order_release);
  }

  // A failure that leaves the ranks out of step: its root cause (the rank it names, -1 none, and
  // its text, which names that rank first) and the rank that found it.
  struct failure {
    errc code = errc::ok;
    int root = -1;
    int seen_by = -1;
    std::string text;
    std::uint64_t call = 0;  // the call it happened in
  };
  // The failure as this rank reports it: the cause first, then who saw it where another did.
  status shown(const failure& f) const {
    if (f.seen_by == rank_ || f.seen_by < 0) return {f.code, f.text, f.root};
    return {f.code,
            f.text + " (seen by rank " + std::to_string(f.seen_by) + "; every rank stopped)",
            f.root};
  }
  // The failure that ends this call here (run() gives up on it), as this rank returns it.
  status adopt(failure f) {
    failed_ = std::move(f);
    return shown(failed_);
  }

  // What rank q recorded of its failure. Read once its flag is raised, or once the entry's
  // outcome names it: it writes the record before either (release), and never again after.
  failure recorded_by(int q) const {
    const control& c = seg_.control_of(q);
    return {static_cast<errc>(c.broken_code), c.broken_root, c.broken_seen_by,
            std::string(c.broken_reason, ::strnlen(c.broken_reason, sizeof c.broken_reason)),
            c.broken_call};
  }
  void record(const failure& f) {
    control& me = seg_.control_of(rank_);
    me.broken_code = static_cast<std::uint32_t>(f.code);
    me.broken_root = f.root;
    me.broken_seen_by = f.seen_by;
    me.broken_call = f.call;
    std::memset(me.broken_reason, 0, sizeof me.broken_reason);
    f.text.copy(me.broken_reason, sizeof me.broken_reason - 1);
  }

  // This rank is out of step from now on: every later call fails with the failure, and the flag
  // in its control block ends every peer's waits (see trouble_while), which report its cause.
  void give_up(const failure& f) {
    if (!broken_.ok()) return;
    broken_ = shown(f);
    if (!recorded_) record(f);  // settle_entry may have written it already: peers may read it
    recorded_ = true;
    std::atomic_ref<std::uint32_t>(seg_.control_of(rank_).broken)
        .store(static_cast<std::uint32_t>(f.code), std::memory_order_release);
  }

  // A peer that gave up on call `sequence` or before, lowest rank first: its failure (none: code
  // ok). A peer that finished its part of this call and gave up on a later one has nothing more
  // to do in this call; the next call fails on its account.
  failure peer_gave_up(std::uint64_t sequence) const {
    for (int q = 0; q < seg_.ranks(); ++q) {
      if (q == rank_) continue;
      const control& c = seg_.control_of(q);
      if (std::atomic_ref<const std::uint32_t>(c.broken).load(std::memory_order_acquire) == 0 ||
          c.broken_call > sequence)
        continue;
      failure f = recorded_by(q);
      f.call = sequence;
      return f;
    }
    return {};
  }

  // What a wait is for, named only when it fails: the call's entry, or a phase of the plan.
  struct awaited {
    int peer;
    const plan* p;
    std::int32_t phase;  // call_entry, or an index into p->phases
    std::string verb(bool past) const {
      if (phase == call_entry) return past ? "entered" : "enter";
      const plan_phase& ph = p->phases[static_cast<std::size_t>(phase)];
      return std::string(past ? "finished" : "finish") + " step " + std::to_string(ph.step) +
             (ph.phase == relay::phase::transfer ? " (transfer" : " (reduce") + ", phase " +
             std::to_string(phase) + ") of";
    }
  };

  // Whether the job can still finish this call while this rank waits for `a`: a failure anywhere
  // (a process gone that had not left, a rank that gave up) is an error here within milliseconds,
  // whoever it is this rank waits for. Builds a message only when there is trouble.
  // A rank that gave up is looked for first, on every rank: its record names the first failure,
  // and a rank that gave up may have exited since.
  failure trouble_while(const awaited& a, std::uint64_t sequence) const {
    const std::string call = " call #" + std::to_string(sequence);
    if (failure f = peer_gave_up(sequence); f.code != errc::ok) return f;
    for (int q = 0; q < seg_.ranks(); ++q) {
      if (q == rank_) continue;
      const control& c = seg_.control_of(q);
      const bool left =
          std::atomic_ref<const std::uint32_t>(c.left).load(std::memory_order_acquire) != 0;
      if (!left && !process_exited(c.pid)) continue;
      // A rank gone or closed may have given up after the scan above (it raises its flag before
      // it exits): its record, which names the first failure, is the one to report.
      if (failure f = peer_gave_up(sequence); f.code != errc::ok) return f;
      if (left && q != a.peer) continue;
      const std::string process =
          left ? "" : process_of(q, seg_.ranks(), [&](int r) { return seg_.control_of(r).pid; });
      const std::string who =
          "rank " + std::to_string(q) + process + (left ? " closed its communicator" : " exited");
      return {errc::peer_lost, q, rank_,
              who + (q == a.peer ? " before it " + a.verb(true) + call : " during" + call),
              sequence};
    }
    return {};
  }

  // Waits until `peer` has published `target`, until `deadline`, or until trouble_while; a wait
  // that fails leaves its failure in failed_.
  status wait(int peer, std::int32_t phase, const call_context& call,
              std::chrono::steady_clock::time_point deadline) {
    const awaited a{peer, call.p, phase};
    const std::uint64_t target = mark(call.sequence, phase + 1);
    // Trouble found while the peer was publishing anyway (it published, then closed) is none.
    failure trouble;
    const wait_result r = wait_at_least(seg_.control_of(peer).counter, target, deadline, [&] {
      trouble = trouble_while(a, call.sequence);
      return trouble.code != errc::ok;
    });
    if (r == wait_result::reached) return {};
    if (r == wait_result::trouble) return adopt(std::move(trouble));
    return adopt({errc::timeout, peer, rank_,
                  "rank " + std::to_string(peer) + " did not " + a.verb(false) + " call #" +
                      std::to_string(call.sequence) + " within " +
                      std::to_string(call.timeout.count()) + " ms",
                  call.sequence});
  }
  status wait(int peer, std::int32_t phase, const call_context& call) {
    return wait(peer, phase, call, std::chrono::steady_clock::now() + call.timeout);
  }

  // Whether every rank entered call `sequence`, decided once for every rank by the segment's
  // entry_outcome word: `entered` says whether this rank saw them all (else failed_ says why it
  // stopped waiting). The first rank to compare-and-swap the word decides. Returns ok where every
  // rank entered, this rank's deadline notwithstanding (the rank that decided saw them all, so
  // their records are visible here now); else the failure of the rank that decided, which wrote
  // its record before it did.
  status settle_entry(std::uint64_t sequence, bool entered) {
    constexpr std::uint64_t failed_bit = 0x8000;
    const std::uint64_t decided = sequence << 16;
    if (!entered) record(failed_);
    const std::uint64_t want =
        entered ? decided : decided | failed_bit | static_cast<unsigned>(rank_);
    std::atomic_ref<std::uint64_t> word(seg_.shared_header().entry_outcome);
    std::uint64_t now = word.load(std::memory_order_acquire);
    while ((now >> 16) < sequence)
      if (word.compare_exchange_weak(now, want, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
        now = want;
    // A later call's word means this one's entry succeeded: no rank passes a failed entry.
    if ((now >> 16) != sequence || (now & failed_bit) == 0) {
      failed_ = {};
      recorded_ = false;
      return {};
    }
    const int by = static_cast<int>(now & 0x7fff);
    recorded_ = true;
    if (by != rank_) {
      failed_ = recorded_by(by);  // of this call: it decided this call's entry
      recorded_ = false;          // this rank's record is not what it reports
    }
    return shown(failed_);
  }

  // The call's agreement: this rank's record is written (it entered), every rank's is read once
  // all have entered, and every rank judges them alike (transport/agreement.hpp).
  status agree(const call_context& call, const status& local) {
    const int R = seg_.ranks();
    const int slot = static_cast<int>(call.sequence % 2);
    call_record& mine = seg_.control_of(rank_).calls[slot];
    mine.word = record_of(call);
    mine.word.code = static_cast<std::uint8_t>(local.code());
    std::memset(mine.reason, 0, sizeof mine.reason);
    local.message().copy(mine.reason, sizeof mine.reason - 1);
    publish(mark(call.sequence, 0));
    // One deadline for all: the rank that is missing is named, whatever its place in rank order.
    const auto deadline = std::chrono::steady_clock::now() + call.timeout;
    bool entered = true;
    for (int q = 0; q < R && entered; ++q)
      entered = wait(q, call_entry, call, deadline).ok();
    if (status s = settle_entry(call.sequence, entered); !s) return s;
    std::vector<entry_record>& all = records_;
    all.resize(static_cast<std::size_t>(R));
    for (int q = 0; q < R; ++q)
      all[static_cast<std::size_t>(q)] = seg_.control_of(q).calls[slot].word;
    const verdict v = judge(all.data(), R, rank_);
    if (v.kind == verdict_kind::go) return {};
    return verdict_status(v, all.data(), R, local, call.sequence, [&](int q) {
      const char* r = seg_.control_of(q).calls[slot].reason;
      return std::string(r, ::strnlen(r, sizeof mine.reason));
    });
  }

  std::byte* address(const plan& p, const plan_operand& o) const {
    return address_of(o, areas_at(seg_.data_of(o.rank), layout_of(p, o.rank)));
  }

  // What this transport refuses of a plan: the same plan on every rank, so every rank refuses
  // alike (inside the agreement, like any refusal).
  status check(const plan& p) const {
    if (p.ranks() != seg_.ranks())
      return {errc::invalid_argument, "the plan has " + std::to_string(p.ranks()) +
                                          " ranks; the communicator has " +
                                          std::to_string(seg_.ranks())};
    if (const std::uint64_t largest = largest_area(p); largest > seg_.bytes_per_rank())
      return {errc::out_of_memory, "the call needs " + std::to_string(largest) +
                                       " bytes of shared memory per rank; the segment has " +
                                       std::to_string(seg_.bytes_per_rank()) +
                                       " (raise RELAY_SHM_BYTES)"};
    return {};
  }

  status run_call(const call_context& call) {
    const auto me = static_cast<std::size_t>(rank_);
    status local = call.local;
    if (local && (call.p == nullptr || call.slice == nullptr))
      local = {errc::invalid_argument, "the call has no plan or no slice"};
    if (local) local = check(*call.p);
    refused_here_ = !local.ok();
    // A refusal anywhere ends the call on every rank before any data moves, so no user memory
    // is written. This rank's input is staged after the verdict: reading it early would win
    // nothing (the peers push only after they, too, have the verdict).
    if (status v = agree(call, local); !v) return v;
    const plan& p = *call.p;
    const plan_slice& s = *call.slice;
    if (p.input_bytes[me] > 0)
      copy_runs(address(p, {static_cast<std::uint16_t>(me), buffer::input, 0}), 0,
                static_cast<const std::byte*>(call.send.data), call.send_runs.stride,
                p.input_bytes[me], call.send_runs.count);
    for (const slice_phase& ph : s.phases) {
      for (const slice_wait& w : ph.waits)
        if (status st = wait(w.peer, w.phase, call); !st) return st;
      for (std::uint32_t i : ph.issued)
        detail::host_run_op(p, p.ops[i], [&](const plan_operand& o) { return address(p, o); });
      if (!ph.issued.empty()) publish(mark(call.sequence, ph.index + 1));
    }
    for (const slice_wait& w : s.exit_waits)
      if (status st = wait(w.peer, w.phase, call); !st) return st;
    // A peer that gave up on this call while this rank did its part (it waited on a rank that
    // this one did not need): its failure, not ok, and this rank's output stays unwritten.
    if (failure gone = peer_gave_up(call.sequence); gone.code != errc::ok)
      return adopt(std::move(gone));
    if (p.output_bytes[me] > 0)
      copy_runs(static_cast<std::byte*>(call.recv.data), call.recv_runs.stride,
                address(p, {static_cast<std::uint16_t>(me), buffer::output, 0}), 0,
                p.output_bytes[me], call.recv_runs.count);
    return {};
  }

  // `bytes` in `runs` equal runs from `from` to `to`, each side's runs `stride` apart (0: end to
  // end: the area's side).
  static void copy_runs(std::byte* to, std::size_t to_stride, const std::byte* from,
                        std::size_t from_stride, std::uint64_t bytes, std::uint32_t runs) {
    const std::uint64_t run = bytes / runs;
    for (std::uint32_t k = 0; k < runs; ++k)
      std::memcpy(to + k * (to_stride ? to_stride : run),
                  from + k * (from_stride ? from_stride : run), run);
  }

  int rank_;
  bool deferred_;                    // shm_options::deferred_verdicts
  bool refused_here_ = false;        // this call was refused by this rank
  std::deque<status> failed_calls_;  // deferred verdicts not taken yet
  std::uint64_t sequence_ = 0;       // this transport's calls (void pieces not counted)
  bool skipped_ = false;             // the last call's verdict was not `go`
  segment seg_;
  status broken_;
  failure failed_;               // why this call left the ranks out of step, if it did
  std::uint64_t next_call_ = 1;  // the sequence of the next call (abort gives up on it)
  bool recorded_ = false;        // failed_ is in this rank's control block already (settle_entry)
  std::vector<entry_record> records_;
};

}  // namespace shm

}  // namespace relay
